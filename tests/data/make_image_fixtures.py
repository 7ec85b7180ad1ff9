#!/usr/bin/python3
"""Write the tiny image fixtures of tests/data/images/ (tests/test_dataset.c).

The output is committed, so CI needs no Python; rerun this after changing it:
    /usr/bin/python3 tests/data/make_image_fixtures.py
PNG and BMP are written by hand (zlib + struct) so every PNG colour type and
bit depth is exactly the one named; the JPEGs are encoded with
torchvision.io.encode_jpeg (Debian's python3-torchvision). The expected pixel
values are literal arrays in tests/test_dataset.c; the asserts below check
that they follow from the pixels written here.
"""
import os
import struct
import zlib

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "images")


def chunk(kind, data):
    c = struct.pack(">I", len(data)) + kind + data
    return c + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff)


def png(name, w, h, depth, ctype, rows, plte=None, trns=None, idat=None):
    """rows: list of already-packed scanline bytes (no filter byte)."""
    raw = b"".join(b"\0" + r for r in rows)
    body = chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, ctype, 0, 0, 0))
    if plte is not None:
        body += chunk(b"PLTE", bytes(sum(plte, ())))
    if trns is not None:
        body += chunk(b"tRNS", bytes(trns))
    body += chunk(b"IDAT", zlib.compress(raw, 9) if idat is None else idat)
    body += chunk(b"IEND", b"")
    data = b"\x89PNG\r\n\x1a\n" + body
    write(name, data)
    return data


def write(name, data):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)


def pack_bits(vals, depth):
    out, acc, n = [], 0, 0
    for v in vals:
        acc = (acc << depth) | v
        n += depth
        if n == 8:
            out.append(acc)
            acc, n = 0, 0
    if n:
        out.append(acc << (8 - n))
    return bytes(out)


def bmp(name, w, h, rows_top_down):
    """24-bit BI_RGB BMP, bottom-up, rows padded to 4 bytes."""
    stride = (w * 3 + 3) & ~3
    pix = b""
    for r in reversed(rows_top_down):
        line = b"".join(bytes((b, g, r_)) for (r_, g, b) in r)
        pix += line + b"\0" * (stride - len(line))
    hdr = struct.pack("<IiiHHIIiiII", 40, w, h, 1, 24, 0, len(pix),
                      2835, 2835, 0, 0)
    data = b"BM" + struct.pack("<IHHI", 14 + len(hdr) + len(pix), 0, 0,
                               14 + len(hdr)) + hdr + pix
    write(name, data)


def scale16(v):
    """libpng's png_set_scale_16 (png_do_scale_16_to_8)."""
    hi, lo = v >> 8, v & 0xff
    return hi + (((lo - hi + 128) * 65535) >> 24)


def main():
    os.makedirs(OUT, exist_ok=True)

    # gray 8-bit 4x4: 10 + 16 * index
    g = [[10 + 16 * (4 * y + x) for x in range(4)] for y in range(4)]
    png("gray8.png", 4, 4, 8, 0, [bytes(r) for r in g])
    # gray 8-bit 2x2 (resize up)
    png("gray2.png", 2, 2, 8, 0, [bytes((0, 100)), bytes((200, 50))])
    # gray 1-bit 8x2
    bits = [[1, 0, 1, 1, 0, 0, 1, 0], [0, 1, 0, 0, 1, 1, 0, 1]]
    png("gray1.png", 8, 2, 1, 0, [pack_bits(r, 1) for r in bits])
    # gray + alpha 8-bit 2x2
    ga = [[(200, 255), (200, 128)], [(100, 0), (50, 64)]]
    png("graya.png", 2, 2, 8, 4, [bytes(sum(r, ())) for r in ga])
    # palette, 4-bit indices, 4x1; and the same with tRNS (3 entries)
    plte = [(255, 0, 0), (0, 255, 0), (0, 0, 255), (10, 20, 30)]
    png("pal.png", 4, 1, 4, 3, [pack_bits([3, 2, 1, 0], 4)], plte=plte)
    png("pal_trns.png", 4, 1, 4, 3, [pack_bits([3, 2, 1, 0], 4)], plte=plte,
        trns=[255, 128, 0])
    # RGB 8-bit 2x2 (also the preprocessing image)
    rgb = [[(10, 20, 30), (40, 50, 60)], [(70, 80, 90), (100, 110, 120)]]
    good = png("rgb.png", 2, 2, 8, 2, [bytes(sum(r, ())) for r in rgb])
    # RGBA 8-bit 2x2
    rgba = [[(255, 128, 0, 255), (255, 128, 0, 128)],
            [(10, 20, 30, 0), (200, 100, 50, 51)]]
    png("rgba.png", 2, 2, 8, 6, [bytes(sum(r, ())) for r in rgba])
    # RGB 16-bit 2x2
    rgb16 = [[(65535, 0, 1000), (25700, 32000, 50000)],
             [(12345, 257, 300), (128, 40000, 65280)]]
    png("rgb16.png", 2, 2, 16, 2,
        [b"".join(struct.pack(">HHH", *p) for p in r) for r in rgb16])
    want16 = [[(255, 0, 4), (100, 125, 195)], [(48, 1, 1), (0, 156, 254)]]
    for r, wr in zip(rgb16, want16):
        for p, wp in zip(r, wr):
            assert tuple(round(v / 257) for v in p) == wp, (p, wp)
            assert tuple(scale16(v) for v in p) == wp, (p, wp)
    # 1000 -> 4 (rounded) where stripping (>> 8) would give 3
    assert 1000 >> 8 == 3

    # corrupt: rgb.png with one IDAT data byte flipped (bad zlib data and CRC)
    i = good.index(b"IDAT") + 6
    write("corrupt.png", good[:i] + bytes((good[i] ^ 0x55,)) + good[i + 1:])
    # header-only PNGs over the memory bound: a side over 16384, and
    # 12000x12000 RGB (432 MB decoded, over 256 MiB)
    png("huge_side.png", 20000, 2, 8, 0, [], idat=zlib.compress(b""))
    png("huge_bytes.png", 12000, 12000, 8, 2, [], idat=zlib.compress(b""))

    # BMP 24-bit 3x2 (rows padded), exact
    bmp("img.bmp", 3, 2, [[(1, 2, 3), (4, 5, 6), (7, 8, 9)],
                          [(250, 240, 230), (128, 64, 32), (0, 0, 0)]])
    bmp("zero.bmp", 0, 0, [])

    # JPEG 16x16: top half (200,100,50), bottom half (30,60,220)
    import torch
    from torchvision.io import encode_jpeg
    img = np.zeros((3, 16, 16), np.uint8)
    img[:, :8, :] = np.array([200, 100, 50], np.uint8)[:, None, None]
    img[:, 8:, :] = np.array([30, 60, 220], np.uint8)[:, None, None]
    write("img.jpg", bytes(encode_jpeg(torch.from_numpy(img), 95).numpy()))
    # truncated JPEG: 48x48 noise cut in the middle of its scan data
    rng = np.random.default_rng(4)
    noise = rng.integers(0, 256, (3, 48, 48), dtype=np.uint8)
    full = bytes(encode_jpeg(torch.from_numpy(noise), 90).numpy())
    write("trunc.jpg", full[:len(full) // 2])

    with open(os.path.join(OUT, "README.txt"), "w") as f:
        f.write("Fixtures for tests/test_dataset.c, written by "
                "tests/data/make_image_fixtures.py.\n")


if __name__ == "__main__":
    main()
