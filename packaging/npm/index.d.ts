// Types of cerulean-tables (index.js).
// @azure/data-tables is an optional peer dependency: where it is not installed, the import below
// resolves to nothing and its three types are `any`, so the file compiles either way (no TS2307,
// no --skipLibCheck). The ts-ignore is the one TypeScript honours for an optional module.
// @ts-ignore
import type { TableClient, TableServiceClient, TableServiceClientOptions } from '@azure/data-tables';

/** The account every server serves. */
export declare const ACCOUNT: 'devstoreaccount1';
/** The account's well-known key (the same as Azurite's development account). */
export declare const KEY: string;
/** The environment variable that names a server executable: `CERULEAN_BINARY`. */
export declare const BINARY_ENV: 'CERULEAN_BINARY';

export interface StartOptions {
  /** The server executable; default `$CERULEAN_BINARY`, else the server of this platform's package. */
  binary?: string;
  /** Where the tables live: in memory (default) or under a temporary directory removed by `stop()`. */
  storage?: 'memory' | 'temporaryDirectory';
  /** A directory for the SQLite database that outlives the server; overrides `storage`. */
  location?: string;
  /** Port on 127.0.0.1; 0 (default) picks a free one. */
  port?: number;
  /** Keep the access log (passed to `onOutput`); off by default. */
  accessLog?: boolean;
  /** More command-line arguments, e.g. `['--faults', 'rules.json']`. */
  args?: string[];
  /** Receives each line the server writes. */
  onOutput?: (line: string) => void;
  /** How long to wait for the start-up line (default 30000). */
  startTimeoutMs?: number;
  /** Accounts to serve beside the development account, for `leaseAccount()` (default 0). */
  accounts?: number;
}

/** A fault rule of `/_faults`: which requests it matches (absent: any) and what it does. */
export interface FaultRule {
  /** An operation as the access log names it: `InsertEntity`, `QueryEntities`, `Batch`, … (`*`: any). */
  operation?: string;
  table?: string;
  partitionKey?: string;
  /** Answer with this Azure error, e.g. `status: 503, code: 'ServerBusy'`. */
  status?: number;
  code?: string;
  message?: string;
  /** Reset the connection before running the request, or after running it instead of answering. */
  drop?: 'before' | 'after';
  /** Wait this long first (then do the above, or just run the request). */
  delayMs?: number;
  /** Fire on at most this many requests. */
  count?: number;
  /** Let this many matching requests through first. */
  skip?: number;
  /** Fire with this probability, from a generator seeded with `seed`: the same requests every run. */
  probability?: number;
  seed?: number;
}

/** A rule as the server lists it, with its counters. */
export interface FaultRuleStatus extends FaultRule {
  account: string;
  /** Requests that matched while the rule could still fire. */
  matched: number;
  /** Requests the rule acted on. */
  fired: number;
}

export interface SnapshotInfo {
  name: string;
  created: Date;
  tables: number;
  entities: number;
}

export interface SnapshotRestoreResult {
  name: string;
  tablesKept: number;
  tablesPatched: number;
  tablesCopied: number;
  entitiesCopied: number;
}

/** What an account offers: clients, reset, snapshots and fault rules, all for that account alone. */
export interface CeruleanAccountApi {
  /** The table endpoint, `http://127.0.0.1:PORT/ACCOUNT`. */
  readonly url: string;
  /** A connection string for any Azure Tables SDK. */
  readonly connectionString: string;
  readonly key: string;
  /**
   * A client of `@azure/data-tables` (an optional peer dependency) for this account; throws
   * `CeruleanSdkNotFoundError` when that package is not installed.
   */
  tableServiceClient(options?: TableServiceClientOptions): TableServiceClient;
  tableClient(tableName: string, options?: TableServiceClientOptions): TableClient;
  /** Deletes every table of the account (snapshots stay). */
  reset(): Promise<void>;
  saveSnapshot(name: string): Promise<SnapshotInfo>;
  /** Brings the account back to exactly the saved state; rejects with statusCode 404 for an unknown name. */
  restoreSnapshot(name: string): Promise<SnapshotRestoreResult>;
  listSnapshots(): Promise<SnapshotInfo[]>;
  deleteSnapshot(name: string): Promise<void>;
  /** Replaces the account's fault rules; resolves to them as the server lists them, with their counters. */
  setFaults(rules: ReadonlyArray<FaultRule>): Promise<FaultRuleStatus[]>;
  getFaults(): Promise<FaultRuleStatus[]>;
  clearFaults(): Promise<void>;
}

/** One account of a running server: the development account, or one from `leaseAccount()`. */
export declare class CeruleanAccount implements CeruleanAccountApi {
  private constructor();
  /** The account name, e.g. `devstoreaccount1` or `cerulean3`. */
  readonly name: string;
  readonly url: string;
  readonly connectionString: string;
  readonly key: string;
  tableServiceClient(options?: TableServiceClientOptions): TableServiceClient;
  tableClient(tableName: string, options?: TableServiceClientOptions): TableClient;
  reset(): Promise<void>;
  saveSnapshot(name: string): Promise<SnapshotInfo>;
  restoreSnapshot(name: string): Promise<SnapshotRestoreResult>;
  listSnapshots(): Promise<SnapshotInfo[]>;
  deleteSnapshot(name: string): Promise<void>;
  setFaults(rules: ReadonlyArray<FaultRule>): Promise<FaultRuleStatus[]>;
  getFaults(): Promise<FaultRuleStatus[]>;
  clearFaults(): Promise<void>;
  /** A leased account: empties it (tables, snapshots, fault rules) and gives it back to the server. */
  release(): Promise<void>;
  /** `release()` for a leased account, for `await using`. */
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * A running server; `stop()` ends it, and so does leaving an `await using` block (TypeScript 5.2+
 * with `lib` `esnext.disposable`, or `@types/node` 20.4+, which declares `Symbol.asyncDispose`).
 * Its account calls act on the development account.
 */
export declare class CeruleanServer implements CeruleanAccountApi {
  private constructor();
  readonly host: string;
  readonly port: number;
  /** `devstoreaccount1`. */
  readonly account: string;
  readonly key: string;
  /** The development account's table endpoint, `http://127.0.0.1:PORT/devstoreaccount1`. */
  readonly url: string;
  readonly connectionString: string;
  /** The development account, as a `CeruleanAccount`. */
  readonly developmentAccount: CeruleanAccount;
  /** How many accounts `leaseAccount()` hands out (the `accounts` option). */
  readonly accounts: number;
  /** Milliseconds from starting the process to its start-up line. */
  readonly startupMs: number;
  readonly pid: number;
  tableServiceClient(options?: TableServiceClientOptions): TableServiceClient;
  tableClient(tableName: string, options?: TableServiceClientOptions): TableClient;
  reset(): Promise<void>;
  saveSnapshot(name: string): Promise<SnapshotInfo>;
  restoreSnapshot(name: string): Promise<SnapshotRestoreResult>;
  listSnapshots(): Promise<SnapshotInfo[]>;
  deleteSnapshot(name: string): Promise<void>;
  setFaults(rules: ReadonlyArray<FaultRule>): Promise<FaultRuleStatus[]>;
  getFaults(): Promise<FaultRuleStatus[]>;
  clearFaults(): Promise<void>;
  /** An account for the caller alone until it calls `release()`; waits while all are leased. */
  leaseAccount(): Promise<CeruleanAccount>;
  /** SIGTERM, then SIGKILL after 5 s; removes a temporary directory. */
  stop(): Promise<void>;
  /** `stop()`, for `await using server = await start()`. */
  [Symbol.asyncDispose](): Promise<void>;
}

/** The test framework's hooks: node:test and mocha `{ before, after }`, vitest `{ before: beforeAll, after: afterAll }`. */
export interface FixtureHooks {
  before: (fn: () => Promise<void>) => unknown;
  after: (fn: () => Promise<void>) => unknown;
  /** With `seed`: restores the seeded state before every test. */
  beforeEach?: (fn: () => Promise<void>) => unknown;
  /** Clears the account's fault rules after every test. */
  afterEach?: (fn: () => Promise<void> | undefined) => unknown;
}

export interface FixtureOptions {
  /** Fills the account once; the state it leaves is saved and restored by `restore()` (and before each test with `beforeEach`). */
  seed?: (account: CeruleanAccount) => Promise<void>;
  /** Start a server of the fixture's own with these options instead of sharing one. */
  server?: StartOptions;
}

/** What `fixture()` returns: the suite's account and server, from its before hook to its after hook. */
export interface Fixture {
  readonly account: CeruleanAccount;
  readonly server: CeruleanServer;
  /** Brings the account back to the state `seed` left. */
  restore(): Promise<void>;
}

/**
 * Registers hooks that give the suite an account of its own on a server shared by every fixture
 * of the process (started by the first, stopped after the last).
 */
export declare function fixture(hooks: FixtureHooks, options?: FixtureOptions): Fixture;

/** Starts a server and resolves once it listens. */
export declare function start(options?: StartOptions): Promise<CeruleanServer>;

/** The executable `start()` would run; throws `CeruleanBinaryNotFoundError` when there is none. */
export declare function binaryPath(options?: { binary?: string } & PlatformOptions): string;

/** A machine other than this one (default: `process.platform`, `process.arch`, `detectLibc()`). */
export interface PlatformOptions {
  platform?: string;
  arch?: string;
  libc?: 'glibc' | 'musl';
}

/** The platform package for this machine, e.g. `@cerulean-tables/linux-x64-musl`; null if none. */
export declare function platformPackage(options?: PlatformOptions): string | null;

/** The C library on Linux (`'glibc'` or `'musl'`, from Node's diagnostic report), else null. */
export declare function detectLibc(platform?: string): 'glibc' | 'musl' | null;

/** Returns a path to `file` that can be executed (the file made executable, or a private copy). */
export declare function ensureExecutable(file: string): string;

export declare class CeruleanBinaryNotFoundError extends Error {
  readonly code: 'CERULEAN_BINARY_NOT_FOUND';
}

/** `tableClient()` or `tableServiceClient()` was called without `@azure/data-tables` installed. */
export declare class CeruleanSdkNotFoundError extends Error {
  readonly code: 'CERULEAN_SDK_NOT_FOUND';
}

/** A reserved endpoint answered with an error. */
export declare class CeruleanAdminError extends Error {
  readonly statusCode: number;
  /** The `x-ms-error-code`, e.g. `ResourceNotFound`. */
  readonly code: string | undefined;
}
