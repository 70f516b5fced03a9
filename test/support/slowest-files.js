/**
 * A jest reporter that prints the ten slowest test files after a run, so the
 * time a suite costs is on record in every CI log (docs/testing.md).
 */
export default class SlowestFiles {
  onRunComplete(_contexts, results) {
    const files = results.testResults
      .map((r) => ({ file: r.testFilePath, ms: r.perfStats.end - r.perfStats.start }))
      .sort((a, b) => b.ms - a.ms)
      .slice(0, 10);
    if (files.length < 2) return;
    const root = process.cwd() + "/";
    const lines = files.map((f) => `  ${(f.ms / 1000).toFixed(1).padStart(7)} s  ${f.file.replace(root, "")}`);
    process.stdout.write(`\nSlowest test files:\n${lines.join("\n")}\n`);
  }
}
