/**
 * The AgenticPipeline: `runPipeline(config)` trains as `deno task train` does.
 *
 * @module
 */
export { type PipelineOptions, type PipelineSummary, runPipeline } from "./pipeline.ts";
