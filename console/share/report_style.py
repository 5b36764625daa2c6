"""The report's stylesheet: readable on a phone, printable (no page break inside a figure or
a table row), no fonts or images fetched."""

CSS = """
:root { color-scheme: light; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1a1a1a;
  margin: 0 auto; padding: 16px; max-width: 1100px; }
h1 { font-size: 1.5em; margin: 0.2em 0; } h2 { font-size: 1.25em; margin-top: 1.6em;
  border-bottom: 1px solid #ccc; } h3 { font-size: 1.05em; margin-top: 1.2em; }
.meta { color: #555; }
figure { margin: 1em 0; break-inside: avoid; page-break-inside: avoid; }
figcaption { font-weight: 600; margin-bottom: 4px; }
svg.chart { width: 100%; height: auto; max-width: 760px; display: block; background: #fff; }
ul.legend { list-style: none; padding: 0; margin: 4px 0; display: flex; flex-wrap: wrap;
  gap: 4px 16px; font-size: 0.9em; }
.swatch { display: inline-block; width: 22px; margin-right: 6px; vertical-align: middle; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 0.92em; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr { break-inside: avoid; page-break-inside: avoid; }
pre.log { background: #f5f5f5; border: 1px solid #ddd; padding: 6px; white-space: pre-wrap;
  word-break: break-all; font-size: 0.85em; }
.cause { border-left: 4px solid #D55E00; padding-left: 10px; margin: 0.8em 0;
  break-inside: avoid; }
.verdict { font-size: 1.1em; font-weight: 600; }
.word-better { color: #007a55; } .word-worse { color: #b34700; }
section.run { break-before: auto; }
@media print { body { max-width: none; padding: 0; font-size: 11pt; }
  .scroll { overflow: visible; } a { color: inherit; text-decoration: none; } }
@media (max-width: 600px) { body { padding: 8px; font-size: 14px; } th, td { padding: 2px 4px; } }
"""
