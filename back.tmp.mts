const R = '/work/main/src';
const { parseTrainingConfig } = await import(`${R}/train/config.ts`);
const { prepareRun } = await import(`${R}/train/setup.ts`);
const { agentView } = await import(`${R}/core/types.ts`);
const { RecombinationTaskGenerator } = await import(`${R}/curriculum/generator.ts`);
const config = parseTrainingConfig({ env: 'shop', mode: 'dreamgym', seed: 0 }, 'quick');
const run = await prepareRun(config);
const spec = run.deps.spec;
const sets = { recorded: run.deps.offline.tasks.slice(0, 50), generated: await new RecombinationTaskGenerator({ seed: 7 }).generate(run.deps.offline.tasks, 50), unrecorded: run.deps.offline.extraTasks.slice(0, 50) };
for (const [name, tasks] of Object.entries(sets)) {
  let same = 0, n = 0, shown = 0, firstSame = 0;
  for (const task of tasks as any[]) {
    const env = spec.create(); const first = env.reset(task); const v = agentView(task);
    const sfirst = await run.experience!.reset(v, []);
    const a = first.actions[0];
    const r1 = env.step(a); const s1 = await run.experience!.step({ task: v, history: [], observation: sfirst, action: a, demos: [] });
    const back = 'click[back to search]';
    if (!r1.observation.actions.includes(back) || !s1.observation.actions.includes(back)) continue;
    const r2 = env.step(back); const s2 = await run.experience!.step({ task: v, history: [{ observation: sfirst, action: a }], observation: s1.observation, action: back, demos: [] });
    n++; const eq = JSON.stringify(r2.observation.actions) === JSON.stringify(s2.observation.actions); same += +eq;
    firstSame += +(JSON.stringify(s2.observation.actions) === JSON.stringify(sfirst.actions));
    if (!eq && shown++ < 1) console.log(name, task.instruction, '\n REAL', r2.observation.actions, '\n SIM', s2.observation.actions, '\n why', s2.reasoning);
  }
  console.log(`${name}: search page after back to search equal to real ${same}/${n}, equal to the episode's own first page ${firstSame}/${n}`);
}
run.dispose(); process.exit(0);
