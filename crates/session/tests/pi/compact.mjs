// pi prepares a compaction of a session file's current path with keepRecentTokens = argv[3].
const [prefix, file, keep] = process.argv.slice(2);
const base = `${prefix}/node_modules/@earendil-works/pi-coding-agent/dist/core`;
const { SessionManager } = await import(`${base}/session-manager.js`);
const { prepareCompaction } = await import(`${base}/compaction/compaction.js`);
const { computeFileLists } = await import(`${base}/compaction/utils.js`);
const sm = SessionManager.open(file);
const prep = prepareCompaction(sm.getBranch(), { enabled: true, reserveTokens: 16384, keepRecentTokens: Number(keep) });
console.log(JSON.stringify(prep ? {
  firstKeptEntryId: prep.firstKeptEntryId,
  messagesToSummarize: prep.messagesToSummarize,
  turnPrefixMessages: prep.turnPrefixMessages,
  tokensBefore: prep.tokensBefore,
  previousSummary: prep.previousSummary ?? null,
  ...computeFileLists(prep.fileOps),
} : null));
