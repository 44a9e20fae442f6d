// Counts passed, failed and skipped test cases in a Deno JUnit report.
// Usage: deno run --allow-read .ci/junit_summary.ts REPORT.xml -> "P F S"
const xml = await Deno.readTextFile(Deno.args[0]!);
let passed = 0;
let failed = 0;
let skipped = 0;
for (const m of xml.matchAll(/<testcase\b[^>]*?(\/>|>([\s\S]*?)<\/testcase>)/g)) {
  const body = m[2] ?? "";
  if (/<(failure|error)\b/.test(body)) failed++;
  else if (/<skipped\b/.test(body)) skipped++;
  else passed++;
}
console.log(`${passed} ${failed} ${skipped}`);
