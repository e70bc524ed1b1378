// A small inline-SVG line chart (no library, nothing fetched): x is the
// second of the run, each series one polyline; gaps (seconds with no
// answer) break the line. Each point carries a <title> as its tooltip.
export interface Series {
  name: string;
  color: string;
  values: (number | null)[];
}

const esc = (s: string): string => s.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);

function niceMax(max: number): number {
  if (!(max > 0)) return 1;
  const step = 10 ** Math.floor(Math.log10(max));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * step >= max) return m * step;
  return 10 * step;
}

export function lineChart(title: string, unit: string, series: readonly Series[], width = 760, height = 240): string {
  const left = 56, right = 12, top = 28, bottom = 34;
  const plotW = width - left - right, plotH = height - top - bottom;
  const n = Math.max(1, ...series.map((s) => s.values.length));
  const yMax = niceMax(Math.max(0, ...series.flatMap((s) => s.values.filter((v): v is number => v !== null))));
  const x = (i: number) => left + (n === 1 ? plotW / 2 : (i / (n - 1)) * plotW);
  const y = (v: number) => top + plotH - (v / yMax) * plotH;
  const parts: string[] = [`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${width} ${height}" role="img" aria-label="${esc(title)}">`, `<text x="${left}" y="18" class="t">${esc(title)}</text>`];
  for (let k = 0; k <= 4; k++) {
    const v = (yMax * k) / 4;
    parts.push(`<line x1="${left}" x2="${width - right}" y1="${y(v)}" y2="${y(v)}" class="g"/>`, `<text x="${left - 6}" y="${y(v) + 4}" text-anchor="end" class="a">${+v.toPrecision(3)}</text>`);
  }
  const ticks = Math.min(n, 10);
  for (let k = 0; k < ticks; k++) {
    const i = Math.round((k * (n - 1)) / Math.max(1, ticks - 1));
    parts.push(`<text x="${x(i)}" y="${height - bottom + 16}" text-anchor="middle" class="a">${i}s</text>`);
  }
  parts.push(`<text x="${width - right}" y="${height - 4}" text-anchor="end" class="a">${esc(unit)} / second of the run</text>`);
  series.forEach((s, si) => {
    let path = "";
    let pen = false;
    s.values.forEach((v, i) => {
      if (v === null) return void (pen = false);
      path += `${pen ? "L" : "M"}${x(i).toFixed(1)},${y(v).toFixed(1)}`;
      pen = true;
      parts.push(`<circle cx="${x(i).toFixed(1)}" cy="${y(v).toFixed(1)}" r="2.5" fill="${s.color}"><title>${esc(s.name)} at ${i}s: ${+v.toPrecision(4)} ${esc(unit)}</title></circle>`);
    });
    parts.push(`<path d="${path}" fill="none" stroke="${s.color}" stroke-width="1.8"/>`);
    parts.push(`<rect x="${left + 8 + si * 110}" y="${top + 4}" width="10" height="10" fill="${s.color}"/><text x="${left + 22 + si * 110}" y="${top + 13}" class="a">${esc(s.name)}</text>`);
  });
  parts.push(`<line x1="${left}" x2="${left}" y1="${top}" y2="${top + plotH}" class="x"/><line x1="${left}" x2="${width - right}" y1="${top + plotH}" y2="${top + plotH}" class="x"/></svg>`);
  return parts.join("");
}
