#!/usr/bin/env python3
"""Writes a C++ header holding a UTF-8 text file as a std::string_view.

    embed_text.py INPUT OUTPUT NAME

Lessons never read files of their own (lessons/registry.hpp): the data a lesson needs beyond the
installed packages (lesson 14's hand-aligned verses) is compiled into the program. The text goes in as
one raw string literal; a delimiter the text does not hold is chosen.
"""
import os
import sys


def raw_string(text, delimiter="attn_text"):
    """text as one C++ raw string literal, with a delimiter the text does not hold."""
    while ")" + delimiter + '"' in text:
        delimiter += "_"
    return 'R"%s(%s)%s"' % (delimiter, text, delimiter)


def write_if_changed(output, text):
    """Writes text to output (whole, through a temporary file) unless it already holds it: an unchanged
    header keeps its time, and nothing that includes it rebuilds."""
    try:
        with open(output, encoding="utf-8") as f:
            if f.read() == text:
                return
    except FileNotFoundError:
        pass
    with open(output + ".tmp", "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(output + ".tmp", output)


def main():
    source, output, name = sys.argv[1:]
    with open(source, encoding="utf-8") as f:
        text = f.read()
    header = ("// Written by lessons/embed_text.py from %s: do not edit.\n#pragma once\n\n#include <string_view>\n\n"
              "inline constexpr std::string_view %s = %s;\n" % (source.split("/")[-1], name, raw_string(text)))
    write_if_changed(output, header)


if __name__ == "__main__":
    main()
