#!/usr/bin/env bash
# Make sure TeX Live (xelatex, latexmk) and poppler-utils are present for `make pdf` and its test.
# The smallest set of Debian packages that builds the book's PDF (checked 2026-12-02, Debian 12:
# about 3 minutes of apt install). Jupyter Book's LaTeX class needs bbm (only in the 500 MB
# texlive-fonts-extra): _latex/bbm.sty stands in. Sphinx uses makeindex (latex_use_xindy: false).
set -u
PKGS="latexmk texlive-latex-recommended texlive-latex-extra texlive-fonts-recommended texlive-xetex fonts-freefont-otf poppler-utils"
if command -v xelatex >/dev/null && command -v latexmk >/dev/null && command -v pdftotext >/dev/null \
   && kpsewhich fncychap.sty >/dev/null 2>&1; then
  exit 0
fi
SUDO=""
[ "$(id -u)" = "0" ] || SUDO="sudo -n"
if command -v apt-get >/dev/null 2>&1; then
  echo "Installing TeX Live for the PDF edition (about 3 minutes)..."
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq >/dev/null \
    && $SUDO apt-get install -y -qq --no-install-recommends $PKGS >/dev/null && exit 0
fi
echo "ensure_tex: could not install TeX Live ($PKGS); install them to build the PDF" >&2
exit 1
