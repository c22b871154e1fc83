// npm run identity-key -- generate: operators create the private key that signs caller identity tokens.
import { Command, CommanderError, Option } from 'commander';
import { KEY_ALGORITHMS, writeSigningKeyFile, type KeyAlgorithm } from '../identity/generate-key.ts';

/** As `npm run keys`: 2 for a usage error (commander's), 1 for a runtime error (the file). */
const USAGE_ERROR = 2;

const program = new Command('identity-key')
  .description('Create the key the gateway signs caller identity tokens with (UPSTREAM_IDENTITY_KEY_FILE).')
  .showHelpAfterError()
  .exitOverride()
  .configureOutput({ outputError: (message, write) => write(`identity-key: ${message}`) });

program
  .command('generate')
  .description('write a new PKCS#8 PEM private key, mode 0600; never overwrites a file')
  .addOption(new Option('--algorithm <algorithm>', 'ed25519 (tokens signed EdDSA) or es256 (P-256, ES256)').choices(KEY_ALGORITHMS).makeOptionMandatory())
  .requiredOption('--out <file>', 'where to write the private key')
  .option('--json', 'print one JSON line {"file", "algorithm", "kid", "publicJwk"}')
  .action(async (options: { algorithm: KeyAlgorithm; out: string; json?: boolean }) => {
    const key = await writeSigningKeyFile(options.out, options.algorithm);
    if (options.json) {
      process.stdout.write(`${JSON.stringify({ file: options.out, algorithm: key.algorithm, kid: key.kid, publicJwk: key.publicJwk })}\n`);
      return;
    }
    process.stdout.write(`wrote ${options.out} (mode 0600): ${key.algorithm} signing key, kid ${key.kid}\n`);
  });

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) process.exit(error.exitCode === 0 ? 0 : USAGE_ERROR);
  const code = (error as NodeJS.ErrnoException).code;
  const message =
    code === 'EEXIST'
      ? `${(error as NodeJS.ErrnoException).path} exists; choose another path (a key that signs must never be overwritten)`
      : (error as Error).message;
  process.stderr.write(`identity-key: ${message}\n`);
  process.exit(1);
}
