"""The test site the browser tests and the browser benchmark serve.

generate(root) writes, under root:

  test.html           a blank page that loads checks.js (the checks run there)
  subresources.html   a page with exactly 100 sub-resources: checks.js,
                      style.css, 80 PNG images (img/NN.png) and 18 scripts
                      (js/NN.js); checks.js can tell from the page that every
                      image decoded, every script ran and the styles applied
                      (both pages name an inline icon, so the browser asks
                      for no /favicon.ico)
  checks.js           the page-side checks (a copy of this directory's file)
  style.css           the stylesheet (#probe gets a width and a colour)
  range.bin           RANGE_FILE_SIZE bytes of file_bytes(): ranged requests
  reval.txt           a small text file: conditional requests
  cached.txt          another: the browser's own revalidation

and, for servers without synthetic bodies (gtlsserver), one file
synthetic/<N> per N in `synthetic_files` holding the N bytes our server
generates for GET /<N> (gtlsserver answers GET /<N> itself, with zeros).
"""

import os
import random
import shutil
import struct
import zlib

ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
IMAGES = 80
SCRIPTS = 18
SUBRESOURCES = IMAGES + SCRIPTS + 2  # + checks.js + style.css
RANGE_FILE_SIZE = 100000
PROBE_WIDTH_PX = 321
PROBE_COLOR = "rgb(1, 2, 3)"
SYNTHETIC_DIR = "synthetic"
HERE = os.path.dirname(os.path.abspath(__file__))


def synthetic_bytes(n):
    """What our server returns for GET /<n>: byte i is ALPHABET[i % 64]."""
    return (ALPHABET * (n // 64 + 1))[:n]


def file_bytes(n):
    """The content of range.bin: byte i is (i * 151 + 17) mod 256, so an
    answer from the wrong offset (anything but a multiple of 256) shows.
    checks.js's fileByte() is the same function."""
    period = bytes((i * 151 + 17) % 256 for i in range(256))
    return (period * (n // 256 + 1))[:n]


def image_size(index):
    """Width and height of img/<index>.png: distinct per image, so the page
    can tell each one decoded (naturalWidth/naturalHeight)."""
    return 16 + index % 10 * 6, 16 + index // 10 * 5


def png(width, height, seed):
    """A truecolour PNG of noise (incompressible, so each is a few kB)."""
    rng = random.Random(seed)
    rows = b"".join(b"\x00" + rng.randbytes(width * 3) for _ in range(height))

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) +
            chunk(b"IDAT", zlib.compress(rows, 6)) + chunk(b"IEND", b""))


def script(index):
    """js/<index>.js: marks itself as run, padded to a few kB."""
    padding = "// " + "x" * 76 + "\n"
    return ("window.scriptsRan = window.scriptsRan || {};\n"
            "window.scriptsRan[%d] = true;\n" % index) + padding * (20 + index)


def stylesheet():
    return ("#probe { width: %dpx; height: 1px; color: %s; }\n"
            "body { margin: 0; }\n" % (PROBE_WIDTH_PX, PROBE_COLOR))


def subresources_page():
    images = "\n".join('<img id="img%d" src="img/%02d.png" alt="">' % (i, i)
                       for i in range(IMAGES))
    scripts = "\n".join('<script src="js/%02d.js"></script>' % i for i in range(SCRIPTS))
    return """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>100 sub-resources</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="style.css">
<script src="checks.js"></script>
</head><body>
<div id="probe"></div>
%s
%s
</body></html>
""" % (images, scripts)


TEST_PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>browser checks</title>
<link rel="icon" href="data:,">
<script src="checks.js"></script>
</head><body></body></html>
"""


def expected_page_shape():
    """What checkSubresources() in checks.js is told to expect."""
    return {
        "paths": (["/checks.js", "/style.css"] + ["/img/%02d.png" % i for i in range(IMAGES)] +
                  ["/js/%02d.js" % i for i in range(SCRIPTS)]),
        "images": [list(image_size(i)) for i in range(IMAGES)],
        "scripts": SCRIPTS,
        "subresources": SUBRESOURCES,
        "probeWidth": PROBE_WIDTH_PX,
        "probeColor": PROBE_COLOR,
    }


def _write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def generate(root, synthetic_files=()):
    """Writes the site under `root` (see the module's description)."""
    _write(os.path.join(root, "test.html"), TEST_PAGE)
    _write(os.path.join(root, "subresources.html"), subresources_page())
    shutil.copyfile(os.path.join(HERE, "checks.js"), os.path.join(root, "checks.js"))
    _write(os.path.join(root, "style.css"), stylesheet())
    for i in range(IMAGES):
        _write(os.path.join(root, "img", "%02d.png" % i), png(*image_size(i), seed=i))
    for i in range(SCRIPTS):
        _write(os.path.join(root, "js", "%02d.js" % i), script(i))
    _write(os.path.join(root, "range.bin"), file_bytes(RANGE_FILE_SIZE))
    _write(os.path.join(root, "reval.txt"), "revalidate me\n" * 100)
    _write(os.path.join(root, "cached.txt"), "cache me\n" * 100)
    for n in synthetic_files:
        _write(os.path.join(root, SYNTHETIC_DIR, str(n)), synthetic_bytes(n))


def mime_types(path="/etc/mime.types"):
    """{extension: media type} as /etc/mime.types says (the first type
    naming an extension wins)."""
    types = {}
    with open(path) as f:
        for line in f:
            fields = line.split("#", 1)[0].split()
            for extension in fields[1:]:
                types.setdefault(extension, fields[0])
    return types
