#!/usr/bin/python3
"""Write the small seed inputs of tests/fuzz/seeds/ that samples/ and
Debian's libonnx-testdata lack: images in every colour type and format the
decoder handles, and .npy files in every dtype and header version the
reader accepts. The output is committed; rerun after changing this:
    /usr/bin/python3 tests/fuzz/make_seeds.py
Needs python3-numpy and python3-pil."""
import io
import os

import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))


def save_img(name, im, fmt, **kw):
    with open(os.path.join(HERE, "seeds", "image", name), "wb") as f:
        im.save(f, fmt, **kw)


def images():
    rng = np.random.default_rng(1)
    rgb = Image.fromarray(rng.integers(0, 256, (7, 5, 3), np.uint8), "RGB")
    gray = Image.fromarray(rng.integers(0, 256, (6, 4), np.uint8), "L")
    rgba = Image.fromarray(rng.integers(0, 256, (5, 3, 4), np.uint8), "RGBA")
    save_img("rgb.jpg", rgb, "JPEG", quality=80)
    save_img("gray.jpg", gray, "JPEG")
    save_img("progressive.jpg", rgb, "JPEG", progressive=True)
    save_img("sub420.jpg", rgb.resize((17, 9)), "JPEG", subsampling=2)
    save_img("rgb24.bmp", rgb, "BMP")
    save_img("gray8.bmp", gray, "BMP")
    save_img("pal4.bmp", rgb.quantize(16), "BMP")
    save_img("rgba32.bmp", rgba, "BMP")
    save_img("rgb.png", rgb, "PNG")
    save_img("rgba.png", rgba, "PNG")
    save_img("gray_interlaced.png", gray, "PNG", interlace=1)
    pal = rgb.quantize(8)
    save_img("palette_trns.png", pal, "PNG", transparency=0)
    save_img("bits1.png", gray.convert("1"), "PNG")
    g16 = Image.fromarray(rng.integers(0, 65536, (3, 4), np.uint16)
                          .astype(np.int32), "I")
    save_img("gray16.png", g16, "PNG")
    la = Image.fromarray(rng.integers(0, 256, (4, 4, 2), np.uint8), "LA")
    save_img("gray_alpha.png", la, "PNG")


def npys():
    out = os.path.join(HERE, "seeds", "npy")
    arrs = {
        "f4_2x3": np.arange(6, dtype="<f4").reshape(2, 3),
        "f8_scalar": np.array(1.5, "<f8"),
        "f2_4": np.array([1, -2, 0.5, 65504], "<f2"),
        "u1_empty": np.zeros((0, 3), "u1"),
        "i1_3d": np.arange(-4, 4, dtype="i1").reshape(2, 2, 2),
        "u2": np.array([1, 65535], "<u2"),
        "i2": np.array([-1, 7], "<i2"),
        "u4": np.array([4000000000], "<u4"),
        "i4_fortran1d": np.asfortranarray(np.arange(3, dtype="<i4")),
        "u8": np.array([1 << 63], "<u8"),
        "i8": np.array([[-5, 1 << 40]], "<i8"),
        "b1": np.array([True, False, True]),
    }
    for name, a in arrs.items():
        np.save(os.path.join(out, name + ".npy"), a)
    # Format 2.0 (uint32 header length): numpy writes it on request.
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.ones((2, 2), "<f4"), version=(2, 0))
    with open(os.path.join(out, "v2_f4.npy"), "wb") as f:
        f.write(buf.getvalue())


if __name__ == "__main__":
    images()
    npys()
