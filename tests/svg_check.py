#!/usr/bin/python3
"""attn run all --kept-race --svg DIR, every lesson's pictures checked as a reader of the files would, and the run's
last words (where to go next after the whole course).

usage: svg_check.py [--xml-only | --book] ATTN_BIN OUT_DIR GOLDEN_DIR

1. XML (always): every tensor of every lesson with a picture (from its golden file in GOLDEN_DIR,
   which holds what `attn export` writes at the defaults: the check_exact test proves it to the
   bit, so the lessons are not run twice) has its file <NN>-<step>-<tensor>.svg, no other file is
   written, and each file is UTF-8 SVG 1.1 that xml.etree parses, with an <svg> root carrying
   xmlns, width, height and viewBox, and the title "Lesson N · step title · tensor", and its own dark
   palette (a <style> with the prefers-color-scheme: dark rules, a background rect.bg). A heatmap has
   one cell per element and every row and column label as text; a line plot one line or marker
   group per series (the first six columns) and each series' name in its legend; a bar chart
   every label.
2. Browser (when chromium and pdftotext are on PATH): a page showing every SVG is printed to
   PDF by headless Chromium, and pdftotext must find every visible label in it, Devanagari
   included (without a Devanagari font Chromium draws boxes, which carry no text); a PNG
   screenshot of the page is left in OUT_DIR for a human to look at.

With --xml-only (the test svg_check_xml), only part 1: its result is then never hidden behind
the browser part's skip.

With --book (the full set's test svg_book_check): the same run also writes the book (`--book
OUT_DIR/site`: the bytes `attn book` writes, tests/test_html.cpp holds them so), and after parts 1
and 2 book_check.py checks it (its check_site: every page as HTML5, in the browser, in print), so
that every lesson runs once for both checks, not once for each. The exit code is the worse of the
two: 1 when either fails, else 77 when either skipped its browser part.

Exit 0 when everything ran and passed, 1 on a failure, 77 (skipped) when the XML part passed
but chromium or pdftotext is missing; under CI=true (where .ci/run installs them) their absence
is a failure instead, so that CI never passes with the browser part left out. Python 3 standard
library only (with --book, book_check.py's html5lib too).
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unicodedata
import xml.etree.ElementTree as ET

SVG_NS = "{http://www.w3.org/2000/svg}"
XML_DECLARATION = b'<?xml version="1.0" encoding="UTF-8"?>'
SKIP = 77
failures = []


def fail(message):
    failures.append(message)
    print("NOT OK  " + message)


def run(command, timeout=300):
    """Runs a command, returning (exit code, stdout + stderr as text)."""
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout,
                          env=dict(os.environ, NO_COLOR="1"))
    return done.returncode, done.stdout.decode("utf-8", "replace")


def lessons(attn):
    """(number, slug) of every lesson, from `attn list`."""
    code, output = run([attn, "list"])
    found = [(int(m.group(1)), m.group(2)) for m in re.finditer(r"^\s*(\d+)\s+(\S+)\s", output, re.M)]
    if code != 0 or not found:
        sys.exit("svg_check: `attn list` failed (exit {}):\n{}".format(code, output))
    return found


def has_picture(t):
    """Whether `attn run --svg` draws the tensor (core/svg.hpp's tensor_svg)."""
    shape, view = t["shape"], t.get("view")
    size = 1
    for n in shape:
        size *= n
    return (view == "heatmap" or (view == "plot" and len(shape) == 2 and size > 0)
            or (view == "bars" and (len(shape) == 1 or (len(shape) == 2 and shape[1] == 1))))


def all_tensors(golden_dir, number, slug):
    """[(step id, tensor)] of every tensor of the lesson's golden file."""
    path = os.path.join(golden_dir, "{:02d}_{}.json".format(number, slug))
    with open(path, encoding="utf-8") as f:
        golden = json.load(f)
    return [(step["id"], t) for step in golden["steps"] for t in step["tensors"]]


def picture_tensors(golden_dir, number, slug):
    """[(step id, tensor)] of the lesson's tensors with a picture in trace order, from its golden file."""
    path = os.path.join(golden_dir, "{:02d}_{}.json".format(number, slug))
    try:
        with open(path, encoding="utf-8") as f:
            golden = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit("svg_check: cannot read the golden file {}: {}".format(path, e))
    return [(step["id"], dict(t, step_title=step["title"])) for step in golden["steps"] for t in step["tensors"]
            if has_picture(t)]


def safe(text):
    """The file-name form of an id: each code point outside [A-Za-z0-9_.-] becomes '_'."""
    return "".join(c if re.fullmatch(r"[A-Za-z0-9_.-]", c) else "_" for c in text)


def expected_names(number, tensors):
    """The file names write_svgs gives, collisions (ignoring case) numbered -2, -3, ..."""
    names, used = [], set()
    for step, t in tensors:
        stem = "{:02d}-{}-{}".format(number, safe(step), safe(t["name"]))
        name, k = stem + ".svg", 2
        while name.lower() in used:
            name, k = "{}-{}.svg".format(stem, k), k + 1
        used.add(name.lower())
        names.append(name)
    return names


def axis_labels(t):
    """The row and column labels the picture must show: the tensor's own, or indices."""
    shape = t["shape"]
    if len(shape) == 1:  # drawn as one row; axis 0 runs along it
        return [], t.get("rows") or [str(i) for i in range(shape[0])]
    if len(shape) != 2:
        return [], []
    rows = t.get("rows") or [str(i) for i in range(shape[0])]
    cols = t.get("cols") or [str(i) for i in range(shape[1])]
    return rows, cols


def check_svg(path, title, t):
    """The XML checks of one file; returns the visible label texts, for the PDF check."""
    name = os.path.basename(path)
    with open(path, "rb") as f:
        raw = f.read()
    if not raw.startswith(XML_DECLARATION):
        fail("{}: does not start with {}".format(name, XML_DECLARATION.decode()))
    try:
        raw.decode("utf-8")
        root = ET.fromstring(raw)
    except (UnicodeDecodeError, ET.ParseError) as e:
        fail("{}: not well-formed UTF-8 XML: {}".format(name, e))
        return []
    if root.tag != SVG_NS + "svg":
        fail("{}: root element is {}, not an SVG <svg>".format(name, root.tag))
        return []
    box = root.get("viewBox", "").split()
    if len(box) != 4 or not all(re.fullmatch(r"-?[0-9.]+", v) for v in box) or float(box[2]) <= 0 or float(box[3]) <= 0:
        fail("{}: viewBox {!r} is not four numbers with a positive size".format(name, root.get("viewBox")))
    for attribute in ("width", "height"):
        if not re.fullmatch(r"[0-9.]+", root.get(attribute, "")):
            fail("{}: <svg> has no numeric {}".format(name, attribute))

    # on its own a file follows the viewer's scheme: its dark palette in its own <style>, over a background rect
    style = root.find(SVG_NS + "style")
    if "fig" not in (root.get("class") or "").split() or style is None or \
            "@media (prefers-color-scheme: dark)" not in (style.text or "") or \
            "svg.fig .bg {" not in (style.text or "") or root.find(SVG_NS + "rect[@class='bg']") is None:
        fail("{}: no dark palette of its own (<svg class=\"fig\">, a <style> for the dark scheme, a rect.bg)".format(name))

    texts = [el.text or "" for el in root.iter(SVG_NS + "text")]
    tooltips = [el.text or "" for el in root.iter(SVG_NS + "title")]
    if title not in texts or root.find(SVG_NS + "title") is None or root.find(SVG_NS + "title").text != title:
        fail("{}: the title {!r} is not shown and given as <title>".format(name, title))

    if t.get("view") == "plot":
        return check_plot(root, name, t, texts)
    if t.get("view") == "bars":
        return check_bars(root, name, t, texts)

    cells = root.find(".//{0}g[@class='cells']".format(SVG_NS))
    count = len(cells.findall(SVG_NS + "rect")) if cells is not None else 0
    elements = 1
    for n in t["shape"]:
        elements *= n
    if count != elements:
        fail("{}: {} cells drawn for {} elements".format(name, count, elements))

    rows, cols = axis_labels(t)
    for label in rows + cols:  # visible, or (thinned out or cut short) in a cell's tooltip
        if label not in texts and not any(label in tip for tip in tooltips):
            fail("{}: the label {!r} appears nowhere".format(name, label))
    fixed = "fixed scale 0 to 1: probabilities" in texts  # 0 to 1 whatever the values
    if not any(x.startswith("max ") for x in texts) and not fixed and "no finite values" not in texts:
        fail("{}: the colour bar has no max/min values (nor the fixed scale of probabilities)".format(name))

    visible = []
    for group in ("row-labels", "col-labels"):
        g = root.find(".//{0}g[@class='{1}']".format(SVG_NS, group))
        visible += [el.text for el in (g.iter(SVG_NS + "text") if g is not None else []) if el.text]
    return visible


def group_texts(root, cls):
    g = root.find(".//{0}g[@class='{1}']".format(SVG_NS, cls))
    return [el.text or "" for el in (g.iter(SVG_NS + "text") if g is not None else [])]


def check_plot(root, name, t, texts):
    """A line plot: one series group per column (six at most), each named in the legend."""
    series = min(t["shape"][1], 6)
    groups = root.findall(".//{0}g[@class='series']".format(SVG_NS))
    if len(groups) != series:
        fail("{}: {} series drawn for {} columns".format(name, len(groups), t["shape"][1]))
    legend = group_texts(root, "legend")
    names = (t.get("cols") or [])[:series] or ["column {}".format(c + 1) for c in range(series)]
    for n in names:
        if n not in legend:
            fail("{}: the series {!r} is not in the legend".format(name, n))
    if not any(x.startswith("x: ") and "y: " in x for x in legend):
        fail("{}: the legend does not say how the axes are scaled".format(name))
    if not group_texts(root, "x-ticks") or not group_texts(root, "y-ticks"):
        fail("{}: an axis has no tick labels".format(name))
    return legend + group_texts(root, "x-ticks")


def check_bars(root, name, t, texts):
    """A bar chart: every element's label, or its index."""
    n = t["shape"][0]
    labels = t.get("rows") or [str(i) for i in range(n)]
    shown = group_texts(root, "bars")
    for label in labels:
        if label not in shown and not any(label.startswith(x.rstrip("…")) for x in shown if x.endswith("…")):
            fail("{}: the label {!r} is not shown".format(name, label))
    return [x for x in shown if not x.endswith("…")]


def run_all(attn, svg_dir, site=None):
    """Runs `attn run all --svg svg_dir` once, as README's first command does, and checks its last words:
    where to go next, after the whole course (one lesson alone does not say it: tests/test_run_options.cpp).
    With --kept-race: lessons 12 and 13 load the race the build trained for this code (the same numbers,
    the same pictures; check_exact trains them afresh). With `site`, the run writes the book there too
    (--book), and says so before its last words."""
    command = [attn, "run", "all", "--kept-race", "--svg", svg_dir] + (["--book", site] if site else [])
    code, output = run(command, timeout=3600)  # a bound on a hang
    if code != 0:
        fail("{}: exit {}\n{}".format(" ".join(command[1:]), code, output[-2000:]))
        return False
    if site and "\nWrote {} pages to {}: open ".format(len(lessons(attn)) + 2, site) not in output:
        fail("attn run all --book {} does not say it wrote the book:\n{}".format(site, output[-1000:]))
    if "lessons ran. Next:\n  one lesson at a time, step by step: " not in output or "attn run 1 --pause\n" not in output:
        fail("attn run all does not end by saying where to go next:\n" + output[-1000:])
    if not output.endswith("(README, 'Exercises (C++)').\n"):
        fail("attn run all does not end with the exercises:\n" + output[-1000:])
    return True


def check_lesson(attn, golden_dir, number, slug, svg_dir):
    """The pictures `attn run all --svg svg_dir` drew of lesson N; returns [(file, visible labels)]."""
    tensors = picture_tensors(golden_dir, number, slug)
    names = expected_names(number, tensors)
    if not names:
        print("        no pictures")
    prefix = "{:02d}-".format(number)
    written = sorted(f for f in os.listdir(svg_dir) if f.startswith(prefix))
    extra = sorted(set(written) - set(names))
    # Measured tensors (lesson 7's timings) are never in a golden file, so their pictures are
    # not listed above: an extra file must not be named after a recorded tensor (one without a
    # picture), and must be an SVG document titled for the lesson.
    recorded = {"{:02d}-{}-{}.svg".format(number, safe(step), safe(t["name"]))
                for step, t in all_tensors(golden_dir, number, slug)}
    for name in extra:
        if name in recorded:
            fail("lesson {}: {} drawn, but its tensor has no picture".format(number, name))
            continue
        try:
            root = ET.parse(os.path.join(svg_dir, name)).getroot()
        except ET.ParseError as e:
            fail("lesson {}: {} is not well-formed XML: {}".format(number, name, e))
            continue
        title = root.find(SVG_NS + "title")
        if root.tag != SVG_NS + "svg" or title is None or not (title.text or "").startswith("Lesson {} · ".format(number)):
            fail("lesson {}: {} is not a picture of the lesson".format(number, name))
        else:
            print("OK      {}  (a measured tensor: not in the golden file)".format(name))
    shown = []
    for name, (step, t) in zip(names, tensors):
        path = os.path.join(svg_dir, name)
        if not os.path.isfile(path):
            fail("lesson {}: {} was not written (step {}, tensor {})".format(number, name, step, t["name"]))
            continue
        before = len(failures)
        title = "Lesson {} · {} · {}".format(number, t["step_title"], t["name"])
        visible = check_svg(path, title, t)
        if len(failures) == before:
            print("OK      {}  ({} labels)".format(name, len(visible)))
        shown.append((name, [title] + visible))
    return shown


# Devanagari vowel signs, virama and nukta. Where the font draws a consonant and its vowel sign
# as one glyph, or puts the sign before its consonant (कीजिए), Chromium's PDF maps the glyph back
# to the consonant alone, so pdftotext drops the sign although the picture shows it. A missing
# font drops the consonants too: that is what the comparison must still catch.
DEVANAGARI_SIGNS = re.compile("[\u0900-\u0903\u093a-\u094f\u0955-\u0957\u0962\u0963]")


def loose(text):
    """Text compared without Devanagari signs and without white space (pdftotext splits words)."""
    return re.sub(r"\s+", "", DEVANAGARI_SIGNS.sub("", text))


def rotated_labels(path):
    """The texts an SVG draws rotated (a transform with rotate)."""
    out = set()
    for element in ET.parse(path).getroot().iter(SVG_NS + "text"):
        if "rotate(" in (element.get("transform") or ""):
            out.add("".join(element.itertext()))
    return out


def browser_check(shown, svg_dir, out_dir, chromium, pdftotext):
    """Prints a page of every SVG to PDF and a PNG; pdftotext must find every visible label."""
    sizes = []
    for name, _ in shown:
        root = ET.parse(os.path.join(svg_dir, name)).getroot()
        sizes.append((float(root.get("width")), float(root.get("height"))))
    # The images flow left to right in a page this wide; the screenshot is as tall as the rows.
    page_width, gap = 1400, 12
    height, x, row = gap, gap, 0.0
    for w, h in sizes:
        if x > gap and x + w + gap > page_width:
            height, x, row = height + row + gap, gap, 0.0
        x, row = x + w + gap, max(row, h)
    height += row + gap
    images = "\n".join('<img src="svg/{}" width="{:g}" height="{:g}" alt="{}">'.format(name, w, h, name)
                       for (name, _), (w, h) in zip(shown, sizes))
    page = os.path.join(out_dir, "svgs.html")
    with open(page, "w", encoding="utf-8") as f:
        f.write('<!doctype html>\n<html><head><meta charset="utf-8"><title>attn heatmaps</title>\n'
                "<style>body {{ margin: 0; padding: {0}px 0 0 {0}px; background: #fff; }}\n"
                "img {{ margin: 0 {0}px {0}px 0; vertical-align: top; }}</style></head>\n"
                "<body>\n{1}\n</body></html>\n".format(gap, images))
    pdf, png = os.path.join(out_dir, "svgs.pdf"), os.path.join(out_dir, "svgs.png")
    url = "file://" + os.path.abspath(page)
    with tempfile.TemporaryDirectory(prefix="svg_check_chromium_") as profile:
        common = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + profile]
        for flags, made in ((["--no-pdf-header-footer", "--print-to-pdf=" + pdf], pdf),
                            (["--hide-scrollbars", "--screenshot=" + png,
                              "--window-size={},{}".format(page_width, int(height))], png)):
            if os.path.exists(made):
                os.remove(made)
            code, output = run(common + flags + [url], timeout=180)
            if code != 0 or not os.path.isfile(made):
                fail("chromium did not write {} (exit {}):\n{}".format(made, code, output[-2000:]))
                return
    code, text = run([pdftotext, "-enc", "UTF-8", pdf, "-"])
    if code != 0:
        fail("pdftotext {}: exit {}\n{}".format(pdf, code, text))
        return
    text = unicodedata.normalize("NFKC", text)  # the ligature "ﬀ" of "off" back to "ff"
    loose_text = loose(text)
    before, approximate = len(failures), []
    for name, labels in shown:
        # labels drawn at -45 degrees (column labels wider than their cells) come out of pdftotext in
        # pieces and out of order when they are short and close (lesson 14's subword pieces: "_be" as
        # "e g _b"): for them, every character drawn is what shows the font had them
        rotated = rotated_labels(os.path.join(svg_dir, name))
        missing = [label for label in labels if label not in text and loose(label) not in loose_text and
                   not (label in rotated and all(ch in loose_text for ch in loose(label)))]
        approximate += [label for label in labels if label not in text and label not in missing]
        if missing:
            fail("{}: not in the rendered PDF text (no font for them?): {}".format(name, missing))
    if len(failures) > before:
        return
    print("OK      the PDF of {} pictures holds every visible label ({})".format(len(shown), pdf))
    if approximate:
        print("        found without their vowel signs, which PDF text extraction drops: {}".format(
            " ".join(sorted(set(approximate)))))
    print("        screenshot for a human to look at: {}".format(png))


def main():
    xml_only = "--xml-only" in sys.argv[1:]
    book = "--book" in sys.argv[1:]
    args = [a for a in sys.argv[1:] if a not in ("--xml-only", "--book")]
    if len(args) != 3 or (xml_only and book):
        sys.exit(__doc__)
    attn, out_dir, golden_dir = (os.path.abspath(a) for a in args)
    svg_dir = os.path.join(out_dir, "svg")
    site = os.path.join(out_dir, "site") if book else None
    for folder in (svg_dir, site):  # stale files would hide a file not written
        if folder:
            shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(out_dir, exist_ok=True)
    listed = lessons(attn)
    ran = run_all(attn, svg_dir, site)
    code = check_svgs(attn, golden_dir, svg_dir, out_dir, listed if ran else [], xml_only)
    if not book or not ran:
        return code
    # the book the same run wrote, checked as book_check.py checks the one `attn book` writes
    print("the book of the same run, {}:".format(site))
    import book_check  # here: book_check.py imports this file's loose()
    book_code = book_check.check_site(attn, site, out_dir)
    return 1 if 1 in (code, book_code) else SKIP if SKIP in (code, book_code) else 0


def check_svgs(attn, golden_dir, svg_dir, out_dir, listed, xml_only):
    """Parts 1 and 2 of the pictures the run wrote of the `listed` lessons; the exit code."""
    shown = []
    for number, slug in listed:
        print("lesson {} ({})".format(number, slug))
        shown += check_lesson(attn, golden_dir, number, slug, svg_dir)
    if not shown and not failures:
        fail("no lesson has a picture: nothing was checked")
    if failures:
        print("{} passed, {} failed".format(len(shown), len(failures)))
        return 1
    print("XML: {} SVG files OK".format(len(shown)))
    if xml_only:
        return 0

    chromium, pdftotext = shutil.which("chromium"), shutil.which("pdftotext")
    if not chromium or not pdftotext:
        missing = [n for n, p in (("chromium", chromium), ("pdftotext (poppler-utils)", pdftotext)) if not p]
        if os.environ.get("CI", "") == "true":
            print("FAIL    browser check: {} not on PATH under CI=true (bash .ci/install-deps --ci installs "
                  "them)".format(" and ".join(missing)))
            return 1
        print("SKIP    browser check: {} not on PATH (the XML checks above passed)".format(" and ".join(missing)))
        return SKIP
    browser_check(shown, svg_dir, out_dir, chromium, pdftotext)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
