/**
 * Building blocks of the trainer: learning-rate schedules, AdamW over a
 * model's flat buffers with gradient clipping and exact state save/restore,
 * packed micro-batches and mini-batches for gradient accumulation, and
 * atomic checkpoint folders.
 *
 * @example
 * ```ts
 * import { buildMicroBatches, lrAt } from "./mod.ts";
 * const lr = lrAt(0, { learningRate: 1e-6, warmupSteps: 10, totalSteps: 100, type: "cosine" });
 * const { stats } = buildMicroBatches([{ tokens: Int32Array.of(1, 2) }], { maxTokens: 64 });
 * console.log(lr, stats.numMicroBatches); // 0 1
 * ```
 *
 * @module
 */
export {
  LR_SCHEDULE_TYPES,
  lrAt,
  lrFactor,
  type LrSchedule,
  type LrScheduleType,
  resolveWarmupSteps,
} from "./lr_schedule.ts";
export {
  AdamW,
  type AdamWOptions,
  type AdamWState,
  defaultNoDecay,
  type Optimizable,
  OPTIMIZER_FILES,
} from "./optimizer.ts";
export {
  buildMicroBatches,
  inferBatching,
  type InferBatchingConfig,
  type MicroBatch,
  type MicroBatches,
  type MicroBatchPlan,
  type MicroBatchStats,
  type MiniBatch,
  type PerTokenArray,
  type PerTokenFields,
  splitMiniBatches,
  sumField,
  trainBatching,
  type TrainBatchingConfig,
  type TrainSample,
} from "./micro_batches.ts";
export {
  distinctSequences,
  type MergedSamples,
  mergeDuplicateSamples,
  mergesExactly,
} from "./dedup.ts";
export {
  type CheckpointInfo,
  type CheckpointManifest,
  CHECKPOINTS_DIR,
  checkpointsDir,
  latestCheckpoint,
  listCheckpoints,
  loadCheckpointManifest,
  MANIFEST_FILE,
  pruneCheckpoints,
  removeIncompleteCheckpoints,
  resolveResume,
  type ResumeDecision,
  saveCheckpoint,
  type SaveCheckpointOptions,
} from "./checkpoint_dir.ts";
export {
  type ActorSample,
  ActorTrainer,
  type PpoSettings,
  sequenceLogprobs,
  toTrainSamples,
} from "./actor.ts";
export {
  type CriticSample,
  type CriticSettings,
  CriticTrainer,
  sequenceValues,
  valueMetrics,
} from "./critic.ts";
export { packSftBatch, SftTrainer } from "./sft.ts";
export { microBatchWeights, shiftToPositions, tokenAlignedOutputs } from "./accumulation.ts";
export {
  adjustBatch,
  type AdjustedBatch,
  BATCH_ADJUST_MODES,
  type BatchAdjustMode,
} from "./batch_adjust.ts";
