#!/usr/bin/env bash
# The pictures of the READMEs (docs/images/), made from the end-to-end test's screenshots of the real
# extension in code-server: cropped, scaled and quantised (pngquant), and the right-click → argument
# box → lenses sequence as an animated GIF (ImageMagick + gifsicle). `make screenshots` runs it after
# `node e2e/run.mjs --screenshots DIR`, which copies the chosen screenshots to DIR by their step names.
#
#   bash e2e/pictures.sh SHOTS_DIR [OUT_DIR]   # OUT_DIR defaults to docs/images
#   bash e2e/pictures.sh --icon [OUT_DIR]      # draw the extension's 128×128 icon (package.json "icon")
#
# Needs ImageMagick, pngquant and gifsicle (Debian: apt-get install imagemagick pngquant gifsicle).
# The screenshots are 1920×1080; the crops below are in those pixels (the explorer side bar is the
# first 347 columns, the results panel starts at column 1135).
set -euo pipefail
cd "$(dirname "$0")/.."

# ImageMagick 7 is `magick`, 6 is `convert`; take one that really is ImageMagick.
IM=""
for c in ${IMAGEMAGICK:-} magick convert /usr/bin/convert; do
  if command -v "$c" >/dev/null 2>&1 && "$c" -version 2>/dev/null | grep -q '^Version: ImageMagick'; then IM="$c"; break; fi
done
[ -n "$IM" ] || { echo "pictures.sh: ImageMagick not found (apt-get install imagemagick)" >&2; exit 2; }
for tool in pngquant gifsicle; do
  command -v "$tool" >/dev/null || { echo "pictures.sh: $tool not found (apt-get install $tool)" >&2; exit 2; }
done

# a PNG: OUT, then ImageMagick's input and operators (crop, resize); quantised to at most 256 colours
png() {
  local out="$1"; shift
  "$IM" "$@" +repage -strip "$out.tmp.png"
  pngquant --force --skip-if-larger --quality 60-90 --speed 1 --strip --output "$out" "$out.tmp.png" || cp "$out.tmp.png" "$out"
  rm -f "$out.tmp.png"
  echo "$out $(wc -c <"$out") bytes"
}

if [ "${1:-}" = "--icon" ]; then
  OUT="${2:-docs/images}"
  mkdir -p "$OUT"
  # a lens over four heat bars (one per line, hottest first), on the dark tile; drawn at 512 and scaled
  png "$OUT/icon.png" -size 512x512 xc:none \
    -fill '#1f2430' -draw 'roundrectangle 16,16 496,496 96,96' \
    -fill '#ef4a24' -draw 'roundrectangle 140,148 330,182 12,12' \
    -fill '#f08c2a' -draw 'roundrectangle 140,204 280,238 12,12' \
    -fill '#f4c542' -draw 'roundrectangle 140,260 215,294 12,12' \
    -fill '#f08c2a' -draw 'roundrectangle 140,316 255,350 12,12' \
    -fill none -stroke '#e8ecf4' -strokewidth 30 -draw 'circle 236,250 236,400' \
    -stroke '#e8ecf4' -strokewidth 54 -draw 'line 350,366 436,452' \
    -resize 128x128
  exit 0
fi

SHOTS="${1:?usage: e2e/pictures.sh SHOTS_DIR [OUT_DIR] | --icon [OUT_DIR]}"
OUT="${2:-docs/images}"
mkdir -p "$OUT"
need() { [ -f "$SHOTS/$1.png" ] || { echo "pictures.sh: no $SHOTS/$1.png (run the whole e2e with --screenshots $SHOTS)" >&2; exit 2; }; }
for s in editor-rmsnorm context-menu argument-box editor-profiled results-roofline compare-summary editor-diff-hints overview-hot-functions notebook-profiled; do
  need "$s"
done

EDITOR=(-crop 1573x820+347+0)   # the editor and the results panel, no side bar, down to line 37
PANEL=(-crop 785x1010+1135+45)  # the results panel alone
png "$OUT/editor-profiled.png" "$SHOTS/editor-profiled.png" "${EDITOR[@]}" -resize 1200x
png "$OUT/results-roofline.png" "$SHOTS/results-roofline.png" "${PANEL[@]}"
png "$OUT/compare.png" "$SHOTS/compare-summary.png" -crop 785x330+1135+45
png "$OUT/editor-diff.png" "$SHOTS/editor-diff-hints.png" "${EDITOR[@]}" -resize 1200x
png "$OUT/overview.png" "$SHOTS/overview-hot-functions.png" -resize 1200x
png "$OUT/notebook.png" "$SHOTS/notebook-profiled.png" -crop 1573x1080+347+0 -resize 1200x

# right-click → the OpLens submenu (where the run took its screenshot) → the argument box → the lenses
menu="$SHOTS/context-menu-oplens.png"
[ -f "$menu" ] || menu="$SHOTS/context-menu.png"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
i=0
for f in "$SHOTS/editor-rmsnorm.png" "$menu" "$SHOTS/argument-box.png" "$SHOTS/editor-profiled.png"; do
  "$IM" "$f" -crop 1573x940+347+0 +repage -resize 960x "$tmp/$i.png"
  i=$((i + 1))
done
# hundredths of a second per frame: the editor, the menu, the box, the result (longest)
"$IM" -delay 120 "$tmp/0.png" -delay 200 "$tmp/1.png" -delay 200 "$tmp/2.png" -delay 500 "$tmp/3.png" \
  -loop 0 +dither -colors 128 "$tmp/raw.gif"
gifsicle -O3 --colors 128 "$tmp/raw.gif" -o "$OUT/profile-function.gif"
echo "$OUT/profile-function.gif $(wc -c <"$OUT/profile-function.gif") bytes"
