// Types of cerulean-tables (index.js).
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

/** A running server; `stop()` ends it (so does `await using`, where the runtime has Symbol.asyncDispose). */
export declare class CeruleanServer {
  private constructor();
  readonly host: string;
  readonly port: number;
  readonly account: string;
  readonly key: string;
  /** The table endpoint, `http://127.0.0.1:PORT/devstoreaccount1`. */
  readonly url: string;
  /** A connection string for any Azure Tables SDK. */
  readonly connectionString: string;
  /** Milliseconds from starting the process to its start-up line. */
  readonly startupMs: number;
  readonly pid: number;
  /** A client of `@azure/data-tables` (a peer dependency) for this server. */
  tableServiceClient(options?: TableServiceClientOptions): TableServiceClient;
  tableClient(tableName: string, options?: TableServiceClientOptions): TableClient;
  /** Deletes every table of the account (snapshots stay). */
  reset(): Promise<void>;
  saveSnapshot(name: string): Promise<SnapshotInfo>;
  /** Brings the account back to exactly the saved state; rejects with statusCode 404 for an unknown name. */
  restoreSnapshot(name: string): Promise<SnapshotRestoreResult>;
  listSnapshots(): Promise<SnapshotInfo[]>;
  deleteSnapshot(name: string): Promise<void>;
  /** Replaces the account's fault rules; resolves to them as the server lists them. */
  setFaults(rules: ReadonlyArray<FaultRule>): Promise<FaultRuleStatus[]>;
  getFaults(): Promise<FaultRuleStatus[]>;
  clearFaults(): Promise<void>;
  /** SIGTERM, then SIGKILL after 5 s; removes a temporary directory. */
  stop(): Promise<void>;
}

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

/** A reserved endpoint answered with an error. */
export declare class CeruleanAdminError extends Error {
  readonly statusCode: number;
  /** The `x-ms-error-code`, e.g. `ResourceNotFound`. */
  readonly code: string | undefined;
}
