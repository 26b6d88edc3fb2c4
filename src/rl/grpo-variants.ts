/**
 * GRPO's named choices (the loss aggregation and the advantage scaling; see src/rl/grpo.ts), apart
 * from the loss itself: the run configuration reads them on the page's main thread, which must
 * not load tfjs (the training worker owns it).
 */

export const GRPO_LOSS_TYPES = ['grpo', 'dr_grpo', 'dapo'] as const;
/** How step losses are aggregated (see src/rl/grpo.ts). */
export type GrpoLossType = (typeof GRPO_LOSS_TYPES)[number];
export const SCALE_REWARDS = ['group', 'batch', 'none'] as const;
/** How advantages are scaled: by the group's std, the batch's std, or not at all. */
export type ScaleRewards = (typeof SCALE_REWARDS)[number];
