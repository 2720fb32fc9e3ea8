"""A grouped bar chart (SVG, no dependencies) of TFLOPS per size from a CSV
with columns size, m, n, k and one `<name>_ms` column per kernel.

    python scripts/plot_gemm_table.py docs/data/2026-11-25-h100-sgemm.csv \
        docs/plots/sgemm_2026-11-25.svg "float32 matmul on an H100" tirc cublas triton
"""
import csv
import sys


def main():
    src, out, title, *names = sys.argv[1:]
    rows = list(csv.DictReader(open(src)))
    tflops = [[2 * int(r["m"]) * int(r["n"]) * int(r["k"]) / float(r[f"{n}_ms"]) / 1e9 for n in names] for r in rows]
    top = max(max(t) for t in tflops) * 1.15
    w, h, left, bottom, top_pad = 760, 380, 60, 50, 40
    plot_w, plot_h = w - left - 20, h - bottom - top_pad
    group = plot_w / len(rows)
    bar = group * 0.8 / len(names)
    colors = ["#1f77b4", "#7f7f7f", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b"]
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{w / 2}" y="20" text-anchor="middle" font-size="14">{title}</text>']
    for t in range(0, int(top) + 1, 10):
        y = top_pad + plot_h * (1 - t / top)
        svg.append(f'<line x1="{left}" y1="{y:.1f}" x2="{w - 20}" y2="{y:.1f}" stroke="#ddd"/>')
        svg.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{t}</text>')
    svg.append(f'<text x="14" y="{top_pad + plot_h / 2}" transform="rotate(-90 14 {top_pad + plot_h / 2})" '
               f'text-anchor="middle">TFLOPS</text>')
    for g, (r, ts) in enumerate(zip(rows, tflops)):
        x0 = left + g * group + group * 0.1
        for i, t in enumerate(ts):
            y = top_pad + plot_h * (1 - t / top)
            svg.append(f'<rect x="{x0 + i * bar:.1f}" y="{y:.1f}" width="{bar - 2:.1f}" '
                       f'height="{top_pad + plot_h - y:.1f}" fill="{colors[i % len(colors)]}"/>')
            svg.append(f'<text x="{x0 + i * bar + bar / 2:.1f}" y="{y - 3:.1f}" text-anchor="middle" '
                       f'font-size="9">{t:.1f}</text>')
        svg.append(f'<text x="{left + g * group + group / 2:.1f}" y="{h - bottom + 18}" '
                   f'text-anchor="middle">{r["size"]}</text>')
    for i, n in enumerate(names):
        svg.append(f'<rect x="{left + 10 + i * 110}" y="{h - 22}" width="12" height="12" fill="{colors[i]}"/>')
        svg.append(f'<text x="{left + 26 + i * 110}" y="{h - 12}">{n}</text>')
    svg.append("</svg>")
    open(out, "w").write("\n".join(svg) + "\n")


if __name__ == "__main__":
    main()
