"""check-png.py PNG...: each file is a PNG that matplotlib decodes and that
is not blank.  Prints one line per file; exit status 1 when any fails.

"Not blank": at least 200 x 200 pixels, more than MIN_COLOURS distinct
colours, a standard deviation of the grey level above MIN_STD, and more
than MIN_COLOURED of the pixels in colour (channels apart by more than
0.2).  A figure of empty axes passes the first three (antialiased text has
a few hundred greys) but not the last: axes, ticks and labels are grey.
"""

import sys

import matplotlib.image
import numpy

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
MIN_COLOURS = 64
MIN_STD = 0.05
MIN_COLOURED = 0.005


def check(path):
    """Return None when path is a PNG that is not blank, else the reason."""
    try:
        with open(path, "rb") as f:
            head = f.read(8)
    except OSError as e:
        return f"cannot read: {e.strerror}"
    if head != PNG_SIGNATURE:
        return f"not a PNG (starts with {head!r})"
    try:
        image = matplotlib.image.imread(path)
    except (OSError, ValueError, SyntaxError) as e:
        return f"does not decode: {e}"
    if image.ndim != 3 or image.shape[0] < 200 or image.shape[1] < 200:
        return f"{image.shape}: not an RGB(A) image of at least 200 x 200"
    rgb = image[:, :, :3].reshape(-1, 3)
    colours = len(numpy.unique(numpy.round(rgb * 255).astype(numpy.uint8),
                               axis=0))
    std = float(rgb.mean(axis=1).std())
    coloured = float((rgb.max(axis=1) - rgb.min(axis=1) > 0.2).mean())
    if colours <= MIN_COLOURS or std <= MIN_STD or coloured <= MIN_COLOURED:
        return (f"blank: {colours} distinct colours (need > {MIN_COLOURS}), "
                f"grey-level std {std:.4f} (need > {MIN_STD}), "
                f"{100 * coloured:.2f}% of pixels in colour "
                f"(need > {100 * MIN_COLOURED:.1f}%)")
    print(f"ok   {path}: {image.shape[1]}x{image.shape[0]}, "
          f"{colours} colours, std {std:.3f}, {100 * coloured:.1f}% in colour")
    return None


def main(paths):
    failed = 0
    for path in paths:
        reason = check(path)
        if reason:
            print(f"FAIL {path}: {reason}")
            failed = 1
    return failed


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
