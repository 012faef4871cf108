// The peer of `sealc compile` in benches/peers.sh: print the macOS seatbelt
// profile that Anthropic's sandbox-runtime makes for a config file, as one
// whole process:
//
//   node driver.mjs CONFIG.json > profile.sb
//
// peers.sh copies this file next to the package's node_modules (under
// target/peers/srt/), so the imports below resolve to the pinned install.
//
// What is called, and why it is the same work: the package's own entry for
// a command, SandboxManager.wrapWithSandbox, reads the config it was
// initialized with, turns it into read and write rules, and on macOS hands
// them to wrapCommandWithSandboxMacOS (dist/sandbox/macos-sandbox-utils.js),
// which builds the profile text (generateSandboxProfile, not exported) and
// wraps the command in `env ... /usr/bin/sandbox-exec -p PROFILE SHELL -c
// CMD`. The manager picks the backend by process.platform and first starts
// its proxies, so off macOS it never reaches that function; this driver
// calls wrapCommandWithSandboxMacOS directly (it has no platform check) and
// does here what wrapWithSandboxOnce does before it for a config with no
// credentials, no MITM proxy and no globs:
//
// - the config file is read and checked by the package's loadConfig (the
//   zod schema, as `srt --settings` does);
// - writes: the package's default write paths for these read rules
//   (getDefaultWritePaths(readRulesOf(...)), what defaultWritePathsUnder
//   returns with no credentials), then allowWrite; denyWrite; a trailing
//   `/**` stripped from each (stripWriteGlobs on macOS);
// - reads: denyRead and allowRead, a trailing `/**` stripped, each path once
//   (resolveReadPathEntries on macOS), plus the `literal` lists;
// - network: restricted (the schema requires network.allowedDomains), and
//   the proxy ports are the config's external httpProxyPort/socksProxyPort.
//   A config without them would get the ports of proxies the manager starts
//   itself; here it gets none, so its profile allows no network at all.
//
// What is printed is the argument after `-p`: the profile, unquoted from
// the package's own single-quote form (a linear pass, small beside the rest).
// Two things the function does on any host are kept, as they are part of
// it: `which bash` (a child process, via whichSync) and realpath of each
// root (so /tmp stays /tmp on Linux, where macOS spells it /private/tmp).
import { loadConfig } from '@anthropic-ai/sandbox-runtime/dist/utils/config-loader.js';
import { wrapCommandWithSandboxMacOS } from '@anthropic-ai/sandbox-runtime/dist/sandbox/macos-sandbox-utils.js';
import { getDefaultWritePaths, removeTrailingGlobSuffix } from '@anthropic-ai/sandbox-runtime/dist/sandbox/sandbox-utils.js';
import { literalReadLists, literalWriteLists, readRulesOf, spelledOf } from '@anthropic-ai/sandbox-runtime/dist/sandbox/path-entries.js';

const loaded = loadConfig(process.argv[2]);
if (loaded.kind !== 'ok') {
  console.error(`driver: ${process.argv[2]}: ${loaded.kind}${loaded.reason ? `: ${loaded.reason}` : ''}`);
  process.exit(2);
}
const config = loaded.config;
const { filesystem: fs, network: net } = config;

const stripped = list => spelledOf(list ?? []).map(removeTrailingGlobSuffix);
const writeConfig = {
  allowOnly: [...getDefaultWritePaths(readRulesOf(fs.denyRead, fs.allowRead, [])), ...stripped(fs.allowWrite)],
  denyWithinAllow: stripped(fs.denyWrite),
  ...literalWriteLists(fs.allowWrite, fs.denyWrite),
};
const readConfig = {
  denyOnly: [...new Set(stripped(fs.denyRead))],
  allowWithinDeny: [...new Set(stripped(fs.allowRead))],
  unlistableDenyDirs: [],
  ...literalReadLists(fs.denyRead, fs.allowRead),
};

const wrapped = wrapCommandWithSandboxMacOS({
  command: 'true',
  needsNetworkRestriction: net.allowedDomains !== undefined,
  httpProxyPort: net.httpProxyPort,
  socksProxyPort: net.socksProxyPort,
  readConfig,
  writeConfig,
  unsetEnvVars: [],
  setEnvVars: {},
  maskedFileBinds: [],
  degradeToDenyPaths: [],
  allowUnixSockets: net.allowUnixSockets,
  allowAllUnixSockets: net.allowAllUnixSockets,
  allowLocalBinding: net.allowLocalBinding,
  allowMachLookup: net.allowMachLookup,
  ignoreViolations: config.ignoreViolations,
  allowPty: config.allowPty,
  allowGitConfig: fs.allowGitConfig ?? false,
  gitSafeDirectories: config.git?.safeDirectories ?? [],
  enableWeakerNetworkIsolation: config.enableWeakerNetworkIsolation ?? false,
  allowAppleEvents: config.allowAppleEvents ?? false,
});

// The words of the package's quote(): bare words, '...' and the "'" it
// splices in for a single quote, separated by spaces.
const words = [];
let word = null;
for (const [, single, double, space, bare] of wrapped.matchAll(/'([^']*)'|"([^"]*)"|( +)|([^ '"]+)/g)) {
  if (space !== undefined) {
    if (word !== null) words.push(word);
    word = null;
  } else {
    word = (word ?? '') + (single ?? double ?? bare);
  }
}
if (word !== null) words.push(word);
const at = words.indexOf('/usr/bin/sandbox-exec');
if (at < 0 || words[at + 1] !== '-p') {
  console.error('driver: no `sandbox-exec -p PROFILE` in what wrapCommandWithSandboxMacOS returned');
  process.exit(1);
}
process.stdout.write(words[at + 2] + '\n');
