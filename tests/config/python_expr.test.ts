import { deepStrictEqual, equal, match } from "node:assert/strict";
import { evalPythonList } from "../../lib/config/python_expr.ts";
import { configError } from "../_helpers.ts";

Deno.test("evalPythonList evaluates range() and list()", () => {
  deepStrictEqual(evalPythonList("list(range(0,16))"), Array.from({ length: 16 }, (_, i) => i));
  deepStrictEqual(evalPythonList("range(4)"), [0, 1, 2, 3]);
  deepStrictEqual(evalPythonList("list(range(0,8,2))"), [0, 2, 4, 6]);
  deepStrictEqual(evalPythonList("list(range(2, 5))"), [2, 3, 4]);
  deepStrictEqual(evalPythonList("list(range(5,0,-2))"), [5, 3, 1]);
  deepStrictEqual(evalPythonList("range(3,-1,-1)"), [3, 2, 1, 0]);
  deepStrictEqual(evalPythonList("list(range(4,4))"), []);
  deepStrictEqual(evalPythonList("list(range(0,4,-1))"), []);
});

Deno.test("evalPythonList evaluates list literals, + and *", () => {
  deepStrictEqual(evalPythonList("[0,1,2]"), [0, 1, 2]);
  deepStrictEqual(evalPythonList("[]"), []);
  deepStrictEqual(evalPythonList("[0,1] + list(range(4,6))"), [0, 1, 4, 5]);
  deepStrictEqual(evalPythonList("list(range(0,2)) + [9]"), [0, 1, 9]);
  deepStrictEqual(evalPythonList("[0]*3"), [0, 0, 0]);
  deepStrictEqual(evalPythonList("[0, 1] * 2"), [0, 1, 0, 1]);
  deepStrictEqual(evalPythonList("[7]*0"), []);
  deepStrictEqual(evalPythonList("[1+1, 2*3, -4]"), [2, 6, -4]);
  deepStrictEqual(evalPythonList("([0] + [1]) * 2"), [0, 1, 0, 1]);
  deepStrictEqual(evalPythonList("  list( range( 0 , 3 ) )  "), [0, 1, 2]);
});

Deno.test("evalPythonList rejects anything else", async () => {
  const cases: [string, RegExp][] = [
    ["import os", /expected an integer/],
    ["__import__('os').system('x')", /expected an integer/],
    ["list(range(0,8)", /expected '\)'/],
    ["range(0,4,0)", /step must not be zero/],
    ["range(0,1,2,3)", /at most 3 arguments/],
    ["3", /does not give a list of integers/],
    ["1 + 2", /does not give a list of integers/],
    ["[[0,1]]", /does not give a list of integers/],
    ["[0] + 1", /'\+' needs two lists/],
    ["[0] * [1]", /'\*' needs a list and an integer/],
    ["list(3)", /list\(\) needs a range or a list/],
    ["[0,1] x", /unexpected text/],
    ["", /expected an integer/],
  ];
  for (const [text, pattern] of cases) {
    const e = await configError(() => evalPythonList(text));
    match(e.message, pattern, text);
    match(e.message, /^Cannot evaluate /, text);
    equal(e.details.found, text);
  }
});
