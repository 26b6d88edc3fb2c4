import { describe, expect, it } from 'vitest';
import type { Task, Trajectory } from '../src/core/types.ts';
import { getEnvSpec } from '../src/envs/registry.ts';
import { generateOfflineData } from '../src/envs/offline.ts';
import { CHAT_REPLY_FORMAT, ChatFormatError, chatLine, chatSystemPrompt, parseChatJsonl, parseChatLine, trajectoryToChat } from '../src/train/chat.ts';

function sample(env: 'shop' | 'household', episodes: number, policy = 'noisy:0.5'): { task: Task; trajectory: Trajectory }[] {
  return [...generateOfflineData(getEnvSpec(env), { episodes, seed: 5, policy, split: 'train' })];
}

describe('chat export', () => {
  it('one conversation per trajectory: system, then a user turn per observation and an assistant turn per action', () => {
    for (const env of ['shop', 'household'] as const) {
      for (const { task, trajectory } of sample(env, 4)) {
        const chat = trajectoryToChat(task, trajectory, { description: getEnvSpec(env).description });
        expect(chat.messages[0]).toEqual({ role: 'system', content: chatSystemPrompt(env, getEnvSpec(env).description) });
        expect(chat.messages).toHaveLength(1 + 2 * trajectory.steps.length);
        trajectory.steps.forEach((step, i) => {
          const user = chat.messages[1 + 2 * i]!;
          const assistant = chat.messages[2 + 2 * i]!;
          expect(user.role).toBe('user');
          expect(user.content).toContain(step.observation.text);
          for (const a of step.observation.actions) expect(user.content).toContain(`- ${a}`);
          expect(assistant).toEqual({ role: 'assistant', content: step.action });
        });
        // The instruction opens the conversation; nothing of the hidden goal goes in.
        expect(chat.messages[1]!.content.startsWith(`Instruction: ${task.instruction}\n`)).toBe(true);
        expect(chat.messages.slice(2).every((m) => !m.content.startsWith('Instruction: '))).toBe(true);
        expect(JSON.stringify(chat)).not.toContain(JSON.stringify(task.goal));
        expect(chat).toMatchObject({ reward: trajectory.reward, success: trajectory.success, source: 'offline', task_id: task.id, trajectory_id: trajectory.id, env });
      }
    }
  });

  it('the system message introduces the environment with its declared description, else names the domain', () => {
    for (const env of ['shop', 'household'] as const) {
      const { description } = getEnvSpec(env);
      expect(chatSystemPrompt(env, description)).toBe(`You are acting in the text environment "${env}": ${description}. Complete the task the instruction describes. ${CHAT_REPLY_FORMAT}`);
      const { task, trajectory } = sample(env, 1)[0]!;
      expect(trajectoryToChat(task, trajectory, { description }).messages[0]!.content).toBe(chatSystemPrompt(env, description));
    }
    // A module's description reaches the system message as declared (trimmed, one final period).
    const { task, trajectory } = sample('shop', 1)[0]!;
    const library = { ...trajectory, env: 'library' };
    const system = trajectoryToChat({ ...task, env: 'library' }, library, { description: '  a small library: find the book and check it out.  ' }).messages[0]!.content;
    expect(system).toBe(`You are acting in the text environment "library": a small library: find the book and check it out. Complete the task the instruction describes. ${CHAT_REPLY_FORMAT}`);
    // No description (or a blank one): the domain is named, and nothing of another domain's text goes in.
    const generic = `You are acting in the text environment "library" to complete the task the instruction describes. ${CHAT_REPLY_FORMAT}`;
    expect(trajectoryToChat({ ...task, env: 'library' }, library).messages[0]!.content).toBe(generic);
    expect(chatSystemPrompt('library', '   ')).toBe(generic);
    expect(chatSystemPrompt('shop')).toBe(`You are acting in the text environment "shop" to complete the task the instruction describes. ${CHAT_REPLY_FORMAT}`);
  });

  it('round-trips through JSONL: roles, contents, rewards and success', () => {
    const pairs = [...sample('shop', 6), ...sample('household', 6, 'noisy:0.8')];
    const records = pairs.map(({ task, trajectory }) => trajectoryToChat(task, trajectory));
    const text = `${records.map(chatLine).join('\n')}\n`;
    const back = parseChatJsonl(text);
    expect(back).toEqual(records);
    expect(back.map((r) => r.reward)).toEqual(pairs.map((p) => p.trajectory.reward));
    expect(back.map((r) => r.success)).toEqual(pairs.map((p) => p.trajectory.success));
    expect(back.some((r) => r.success) && back.some((r) => !r.success)).toBe(true);
    for (const r of back) {
      expect(r.messages.map((m) => m.role)).toEqual(['system', ...r.messages.slice(1).map((_, i) => (i % 2 === 0 ? 'user' : 'assistant'))]);
      // Exactly the keys TRL's conversational loaders read, plus the episode's figures.
      expect(Object.keys(r).sort()).toEqual(['env', 'messages', 'reward', 'source', 'success', 'task_id', 'trajectory_id']);
      for (const m of r.messages) expect(Object.keys(m).sort()).toEqual(['content', 'role']);
    }
  });

  it('leaves out the experience model reasoning and refuses mismatched or empty trajectories', () => {
    const { task, trajectory } = sample('shop', 1)[0]!;
    const withReasoning: Trajectory = { ...trajectory, source: 'synthetic', steps: trajectory.steps.map((s) => ({ ...s, reasoning: 'SIMULATOR-THOUGHTS' })) };
    const chat = trajectoryToChat(task, withReasoning);
    expect(chatLine(chat)).not.toContain('SIMULATOR-THOUGHTS');
    expect(chat.source).toBe('synthetic');
    expect(() => trajectoryToChat({ ...task, id: 'other' }, trajectory)).toThrow(/belongs to task/);
    expect(() => trajectoryToChat(task, { ...trajectory, steps: [] })).toThrow(/no steps/);
  });

  it('parse errors name the line and the field', () => {
    const { task, trajectory } = sample('household', 1)[0]!;
    const good = chatLine(trajectoryToChat(task, trajectory));
    expect(() => parseChatJsonl(`${good}\n{not json\n`)).toThrow(/^line 2: not valid JSON/);
    const bad = JSON.parse(good) as { reward: unknown; messages: { role: string }[] };
    bad.reward = 'high';
    expect(() => parseChatLine(JSON.stringify(bad), 7)).toThrow(/line 7, field reward/);
    const swapped = JSON.parse(good) as { messages: { role: string }[] };
    swapped.messages[1]!.role = 'assistant';
    expect(() => parseChatLine(JSON.stringify(swapped), 3)).toThrow(ChatFormatError);
    expect(() => parseChatLine(JSON.stringify(swapped), 3)).toThrow(/line 3, field messages\.1\.role: expected user/);
    const unfinished = JSON.parse(good) as { messages: unknown[] };
    unfinished.messages.pop();
    expect(() => parseChatLine(JSON.stringify(unfinished))).toThrow(/end with an assistant turn/);
  });
});
