#!/usr/bin/python3
"""Make a detector for tests/ort_crosscheck.sh (nothing here is committed).

    /usr/bin/python3 tests/models/make_detector.py OUT_DIR

Writes OUT_DIR/ssdlite.onnx: torchvision's ssdlite320_mobilenet_v3_large
(weights=None, seeded) exported by torch.onnx at opset 17 the way its
detectors export: one image "image" [1,3,320,320] in, "boxes", "labels"
and "scores" of the first image out, with the batched NMS in an If (an
empty-input then branch, the NMS in the else branch). score_thresh is
lowered to 0.001 so that random-weight heads still send boxes to the NMS.
"""
import os
import sys

import torch
import torchvision


class FirstImage(torch.nn.Module):
    """A batch tensor in, the first image's detections out (a tuple)."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        d = self.m([x[0]])[0]
        return d["boxes"], d["labels"], d["scores"]


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    m = torchvision.models.detection.ssdlite320_mobilenet_v3_large(
        weights=None, weights_backbone=None, score_thresh=0.001)
    m.eval()
    x = torch.rand(1, 3, 320, 320, generator=torch.Generator().manual_seed(1))
    torch.onnx.export(FirstImage(m), (x,), os.path.join(out, "ssdlite.onnx"),
                      opset_version=17, input_names=["image"],
                      output_names=["boxes", "labels", "scores"])


if __name__ == "__main__":
    main()
