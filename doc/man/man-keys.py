#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""man-keys.py DROCED SET TEMPLATE OUTPUT: the man page TEMPLATE with its
@KEYS@ line replaced by the configuration keys `droced --keys=SET` prints
(lib/dataplane/dp_conf_check.c's table, the one the programs check
against), so that the pages never list a key the programs do not take."""
import subprocess
import sys


def troff(text):
    out = []
    for line in text.splitlines():
        if line.startswith("      "):
            out.append(line.strip().replace("\\", "\\e").replace("-", "\\-"))
        elif line.startswith("  "):
            out.append(".TP")
            out.append(".B " + line.strip().replace("\\", "\\e"))
    return "\n".join(out) + "\n"


def main():
    droced, keyset, template, output = sys.argv[1:5]
    keys = subprocess.run([droced, "--keys=" + keyset], check=True,
                          capture_output=True, text=True).stdout
    page = open(template).read()
    if "@KEYS@\n" not in page:
        sys.exit("man-keys.py: no @KEYS@ line in " + template)
    open(output, "w").write(page.replace("@KEYS@\n", troff(keys)))


if __name__ == "__main__":
    main()
