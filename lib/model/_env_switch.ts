/**
 * Switches that the environment can turn off (`NAME=0`) or on (`NAME=1`), read once per use;
 * without permission to read the environment they keep their defaults.
 *
 * @module
 */

/** Whether the environment variable `name` is `value` (false without env permission). */
function envIs(name: string, value: string): boolean {
  try {
    return Deno.env.get(name) === value;
  } catch {
    return false; // no env permission: the default
  }
}

/** Whether the environment variable `name` is "0". */
export function envSwitchOff(name: string): boolean {
  return envIs(name, "0");
}

/** Whether the environment variable `name` is "1". */
export function envSwitchOn(name: string): boolean {
  return envIs(name, "1");
}
