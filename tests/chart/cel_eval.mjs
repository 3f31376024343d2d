// cel_eval.mjs - evaluates one CEL expression on several admission
// objects, for the chart checks.
//
// usage: node cel_eval.mjs CEL_JS_DIR <input.json
// Input: {"expression": "...", "objects": [pod, ...]}; each object is bound
// to the variable `object`, as the API server does for matchConditions.
// Or {"expression": "...", "bindings": [{"object": ..., "oldObject": ...,
// "request": ...}, ...]}: each entry gives every variable.
// Output: a JSON array with, for each object, the result (true or false) or
// {"error": message}.
import { pathToFileURL } from 'node:url'
import { join } from 'node:path'
import { readFileSync } from 'node:fs'

const dir = process.argv[2]
const { evaluate } = await import(pathToFileURL(join(dir, 'lib', 'index.js')).href)
const input = JSON.parse(readFileSync(0, 'utf8'))
const bindings = input.bindings || input.objects.map((object) => ({ object }))
const results = bindings.map((vars) => {
  try {
    return evaluate(input.expression, vars)
  } catch (e) {
    return { error: String(e && e.message ? e.message : e) }
  }
})
process.stdout.write(JSON.stringify(results) + '\n')
