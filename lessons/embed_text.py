#!/usr/bin/env python3
"""Writes a C++ header holding a UTF-8 text file as a std::string_view.

    embed_text.py INPUT OUTPUT NAME

Lessons never read files of their own (lessons/registry.hpp): the data a lesson needs beyond the
installed packages (lesson 14's hand-aligned verses) is compiled into the program. The text goes in as
one raw string literal; a delimiter the text does not hold is chosen.
"""
import sys


def main():
    source, output, name = sys.argv[1:]
    with open(source, encoding="utf-8") as f:
        text = f.read()
    delimiter = "attn_text"
    while ")" + delimiter + '"' in text:
        delimiter += "_"
    header = ("// Written by lessons/embed_text.py from %s: do not edit.\n#pragma once\n\n#include <string_view>\n\n"
              "inline constexpr std::string_view %s = R\"%s(%s)%s\";\n" % (source.split("/")[-1], name, delimiter,
                                                                            text, delimiter))
    old = None
    try:
        with open(output, encoding="utf-8") as f:
            old = f.read()
    except FileNotFoundError:
        pass
    if old != header:  # unchanged, the header keeps its time and nothing that includes it rebuilds
        with open(output + ".tmp", "w", encoding="utf-8") as f:
            f.write(header)
        import os
        os.replace(output + ".tmp", output)


if __name__ == "__main__":
    main()
