// Runs the self-check family by family and fills the table; `document.title` ends in "done"
// (or "failed") when it is over, for a headless browser to wait on.
import init, { open, families } from "./pkg/web.js";

const $ = (id) => document.getElementById(id);
const cell = (row, text, cls) => {
  const td = row.insertCell();
  td.textContent = text;
  if (cls) td.className = cls;
  return td;
};

async function main() {
  await init();
  const quick = new URLSearchParams(location.search).has("quick");
  const checker = await open();
  $("device").textContent = checker.describe();
  // wgpu names a WebGPU adapter by its description, which browsers may leave empty: ask too
  // (Firefox ESR 153 answered a second request with none: then the row is left out).
  const adapter = await navigator.gpu?.requestAdapter();
  const named = adapter && ["vendor", "architecture", "device", "description"]
    .map((k) => adapter.info?.[k]).filter(Boolean).join(", ");
  const rows = [["browser's adapter", named], ...checker.info()];
  for (const [key, value] of rows.filter(([, v]) => String(v ?? "").trim())) {
    $("info").insertAdjacentHTML("beforeend", "<dt></dt><dd></dd>");
    $("info").lastElementChild.previousElementSibling.textContent = key;
    $("info").lastElementChild.textContent = value;
  }
  let failed = 0;
  for (const family of families()) {
    const row = $("results").insertRow();
    cell(row, family);
    const result = cell(row, "running", "result running");
    const start = performance.now();
    const r = await checker.run_family(family, quick, (i, name) => {
      $("now").textContent = `${family} ${i + 1}: ${name}`;
    });
    const ok = r.failures.length === 0;
    result.textContent = ok ? "pass" : "FAIL";
    result.className = "result " + (ok ? "pass" : "fail");
    cell(row, r.checks);
    cell(row, r.failures.length);
    cell(row, r.unsupported.length);
    cell(row, r.skipped);
    cell(row, `${((performance.now() - start) / 1000).toFixed(1)} s`);
    for (const line of r.failures.slice(0, 5)) $("details").textContent += `${family}: ${line}\n`;
    failed += r.failures.length;
  }
  $("now").textContent = failed === 0 ? "all checks passed" : `${failed} checks failed`;
  document.title += failed === 0 ? ": done" : ": failed";
}

main().catch((e) => {
  $("now").textContent = `error: ${e}`;
  document.title += ": failed";
});
