/**
 * Switches that the environment can turn off (`NAME=0`), read once per use; without
 * permission to read the environment they stay on.
 *
 * @module
 */

/** Whether the environment variable `name` is "0". */
export function envSwitchOff(name: string): boolean {
  try {
    return Deno.env.get(name) === "0";
  } catch {
    return false; // no env permission: the default
  }
}
