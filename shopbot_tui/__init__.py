"""ShopBot's terminal front: the Textual app and the `shopbot` command."""

import os

# Textual paints on a fixed beat of TEXTUAL_FPS frames a second, and a frame that overruns
# the beat makes it skip the next beat too. At the default 60, every 20 ms layout of a
# streaming reply became a 40-50 ms wait for the next frame (tests/perf); at 120 a skipped
# beat costs 8 ms. Set here, before anything imports Textual; a person's own setting wins.
os.environ.setdefault("TEXTUAL_FPS", "120")
