using System.Collections.Concurrent;
using System.Diagnostics;
using System.Runtime.InteropServices;
using System.Security.Cryptography;
using System.Text;
using System.Text.RegularExpressions;
using Azure.Data.Tables;

namespace Cerulean.Testing;

/// <summary>
/// A Cerulean server process serving the Azure Table API on 127.0.0.1, started for a test and
/// stopped when disposed. It serves the development account (<see cref="Account"/>,
/// <see cref="Key"/>); <see cref="ConnectionString"/> and <see cref="TableServiceClient"/> connect
/// to it, and the typed calls reset the account, save and restore snapshots, and inject faults.
/// Thread-safe; the admin calls may run concurrently with any client traffic.
/// </summary>
public sealed partial class CeruleanServer : IAsyncDisposable, IDisposable
{
    /// <summary>The account every server serves.</summary>
    public const string Account = "devstoreaccount1";

    /// <summary>The account's well-known key (the same as Azurite's development account).</summary>
    public const string Key =
        "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

    [GeneratedRegex(@"successfully listening at (https?)://(\[[^\]]+\]|[^\s:/]+):(\d+)")]
    private static partial Regex ReadyLine();

    readonly Process _process;
    readonly string? _temporaryDirectory;
    readonly ConcurrentQueue<(string Name, string Key)> _pool;
    readonly SemaphoreSlim _available;
    int _disposed;

    CeruleanServer(Process process, Uri serviceUri, TimeSpan startupTime, string? temporaryDirectory,
                   IReadOnlyList<(string Name, string Key)> pool)
    {
        _process = process;
        ServiceUri = serviceUri;
        StartupTime = startupTime;
        _temporaryDirectory = temporaryDirectory;
        BaseUri = new Uri($"{serviceUri.Scheme}://{serviceUri.Authority}/");
        DevelopmentAccount = new CeruleanAccount(BaseUri, Account, Key, null);
        Accounts = pool.Count;
        _pool = new(pool);
        _available = new SemaphoreSlim(pool.Count);
    }

    Uri BaseUri { get; }

    /// <summary>The development account (<see cref="Account"/>, <see cref="Key"/>), which the
    /// server's own client, reset, snapshot and fault calls act on.</summary>
    public CeruleanAccount DevelopmentAccount { get; }

    /// <summary>How many accounts <see cref="LeaseAccountAsync"/> hands out
    /// (<see cref="CeruleanServerOptions.Accounts"/>).</summary>
    public int Accounts { get; }

    /// <summary>The table endpoint, <c>http://127.0.0.1:PORT/devstoreaccount1</c>.</summary>
    public Uri ServiceUri { get; }

    /// <summary>The port the server listens on.</summary>
    public int Port => ServiceUri.Port;

    /// <summary>A connection string for any Azure Tables SDK.</summary>
    public string ConnectionString =>
        $"DefaultEndpointsProtocol=http;AccountName={Account};AccountKey={Key};TableEndpoint={ServiceUri};";

    /// <summary>From starting the process to its start-up line (it answers from then on).</summary>
    public TimeSpan StartupTime { get; }

    /// <summary>The server's process id.</summary>
    public int ProcessId => _process.Id;

    /// <summary>A client for the development account with the SDK's default options (created once).</summary>
    public TableServiceClient TableServiceClient => DevelopmentAccount.TableServiceClient;

    /// <summary>A new client for the development account, e.g. with a retry policy of its own.</summary>
    public TableServiceClient CreateTableServiceClient(TableClientOptions? options = null) =>
        DevelopmentAccount.CreateTableServiceClient(options);

    /// <summary>A client for one table of the development account.</summary>
    public TableClient GetTableClient(string tableName, TableClientOptions? options = null) =>
        DevelopmentAccount.GetTableClient(tableName, options);

    /// <summary>Starts a server and waits until it listens.</summary>
    /// <exception cref="CeruleanBinaryNotFoundException">no server executable for this platform.</exception>
    /// <exception cref="InvalidOperationException">the server exited or did not listen in time.</exception>
    public static async Task<CeruleanServer> StartAsync(CeruleanServerOptions? options = null,
                                                        CancellationToken cancellationToken = default)
    {
        options ??= new CeruleanServerOptions();
        string binary = CeruleanBinary.EnsureExecutable(CeruleanBinary.Resolve(options.BinaryPath));
        string? temporary = null;
        var psi = new ProcessStartInfo(binary)
        {
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            // A pipe only this process writes to: with --exitWithParent the server stops when it
            // closes, so a test host that dies (even killed) takes its servers along.
            RedirectStandardInput = true,
            UseShellExecute = false,
        };
        foreach (string a in new[] { "--tableHost", "127.0.0.1", "--tablePort", options.Port.ToString() })
            psi.ArgumentList.Add(a);
        if (options.Location != null)
        {
            psi.ArgumentList.Add("--location");
            psi.ArgumentList.Add(Path.GetFullPath(options.Location));
        }
        else if (options.Storage == CeruleanStorage.TemporaryDirectory)
        {
            temporary = Directory.CreateTempSubdirectory("cerulean-").FullName;
            psi.ArgumentList.Add("--location");
            psi.ArgumentList.Add(temporary);
        }
        else
        {
            psi.ArgumentList.Add("--inMemoryPersistence");
        }
        if (!options.AccessLog) psi.ArgumentList.Add("--silent");
        psi.ArgumentList.Add("--exitWithParent");
        foreach (string a in options.Arguments) psi.ArgumentList.Add(a);
        if (options.Accounts < 0) throw new ArgumentOutOfRangeException(nameof(options), "Accounts must be 0 or more");
        var pool = new List<(string Name, string Key)>();
        for (int i = 1; i <= options.Accounts; ++i)
            pool.Add(($"cerulean{i}", Convert.ToBase64String(RandomNumberGenerator.GetBytes(64))));
        if (pool.Count > 0)
        {
            // AZURITE_ACCOUNTS declares accounts beside the development account.
            string spec = string.Join(";", pool.Select(a => $"{a.Name}:{a.Key}"));
            string? inherited = Environment.GetEnvironmentVariable("AZURITE_ACCOUNTS");
            psi.Environment["AZURITE_ACCOUNTS"] = string.IsNullOrEmpty(inherited) ? spec : $"{inherited};{spec}";
        }

        var ready = new TaskCompletionSource<Uri>(TaskCreationOptions.RunContinuationsAsynchronously);
        var early = new StringBuilder();
        void OnLine(string? line, bool stdout)
        {
            if (line == null)
            {
                if (stdout) ready.TrySetException(new InvalidOperationException($"cerulean exited before listening:\n{early}"));
                return;
            }
            if (!ready.Task.IsCompleted) lock (early) early.AppendLine(line);
            options.Output?.Invoke(line);
            Match m = ReadyLine().Match(line);
            if (m.Success && stdout)
                ready.TrySetResult(new Uri($"{m.Groups[1].Value}://{m.Groups[2].Value}:{m.Groups[3].Value}/{Account}"));
        }

        var clock = Stopwatch.StartNew();
        Process process;
        try
        {
            process = Process.Start(psi) ?? throw new InvalidOperationException($"could not start {binary}");
        }
        catch
        {
            DeleteDirectory(temporary);
            throw;
        }
        if (OperatingSystem.IsWindows()) WindowsJob.KillOnClose(process);
        // Both pipes are drained for the server's whole life, so it never blocks on a full one.
        process.OutputDataReceived += (_, e) => OnLine(e.Data, stdout: true);
        process.ErrorDataReceived += (_, e) => OnLine(e.Data, stdout: false);
        process.BeginOutputReadLine();
        process.BeginErrorReadLine();

        Uri serviceUri;
        try
        {
            serviceUri = await ready.Task.WaitAsync(options.StartTimeout, cancellationToken).ConfigureAwait(false);
        }
        catch (Exception e)
        {
            Kill(process);
            process.Dispose();
            DeleteDirectory(temporary);
            if (e is TimeoutException)
                throw new InvalidOperationException($"cerulean did not listen within {options.StartTimeout}:\n{early}", e);
            throw;
        }
        var server = new CeruleanServer(process, serviceUri, clock.Elapsed, temporary, pool);
        // A test host that exits without disposing the server still stops it.
        AppDomain.CurrentDomain.ProcessExit += server.OnProcessExit;
        return server;
    }

    /// <summary>Starts a server and waits until it listens (see <see cref="StartAsync"/>).</summary>
    public static CeruleanServer Start(CeruleanServerOptions? options = null) =>
        StartAsync(options).GetAwaiter().GetResult();

    /// <summary>Deletes every table of the development account at once (snapshots stay).</summary>
    public Task ResetAsync(CancellationToken cancellationToken = default) =>
        DevelopmentAccount.ResetAsync(cancellationToken);

    /// <summary>Saves the development account as <paramref name="name"/> (see
    /// <see cref="CeruleanAccount.SaveSnapshotAsync"/>).</summary>
    public Task<SnapshotInfo> SaveSnapshotAsync(string name, CancellationToken cancellationToken = default) =>
        DevelopmentAccount.SaveSnapshotAsync(name, cancellationToken);

    /// <summary>Brings the development account back to the state saved as <paramref name="name"/>
    /// (see <see cref="CeruleanAccount.RestoreSnapshotAsync"/>).</summary>
    /// <exception cref="Azure.RequestFailedException">404 when there is no such snapshot.</exception>
    public Task<SnapshotRestoreResult> RestoreSnapshotAsync(string name, CancellationToken cancellationToken = default) =>
        DevelopmentAccount.RestoreSnapshotAsync(name, cancellationToken);

    /// <summary>The development account's snapshots.</summary>
    public Task<IReadOnlyList<SnapshotInfo>> ListSnapshotsAsync(CancellationToken cancellationToken = default) =>
        DevelopmentAccount.ListSnapshotsAsync(cancellationToken);

    /// <summary>Deletes a snapshot of the development account.</summary>
    /// <exception cref="Azure.RequestFailedException">404 when there is no such snapshot.</exception>
    public Task DeleteSnapshotAsync(string name, CancellationToken cancellationToken = default) =>
        DevelopmentAccount.DeleteSnapshotAsync(name, cancellationToken);

    /// <summary>Replaces the development account's fault rules and returns them as the server
    /// lists them, with their counters.</summary>
    /// <exception cref="Azure.RequestFailedException">400 <c>InvalidInput</c> for a rule the server refuses.</exception>
    public Task<IReadOnlyList<FaultRuleStatus>> SetFaultsAsync(IEnumerable<FaultRule> rules,
                                                               CancellationToken cancellationToken = default) =>
        DevelopmentAccount.SetFaultsAsync(rules, cancellationToken);

    /// <summary>Replaces the development account's fault rules with these.</summary>
    public Task<IReadOnlyList<FaultRuleStatus>> SetFaultsAsync(params FaultRule[] rules) =>
        DevelopmentAccount.SetFaultsAsync(rules);

    /// <summary>The development account's fault rules with how often each matched and fired.</summary>
    public Task<IReadOnlyList<FaultRuleStatus>> GetFaultsAsync(CancellationToken cancellationToken = default) =>
        DevelopmentAccount.GetFaultsAsync(cancellationToken);

    /// <summary>Removes the development account's fault rules.</summary>
    public Task ClearFaultsAsync(CancellationToken cancellationToken = default) =>
        DevelopmentAccount.ClearFaultsAsync(cancellationToken);

    /// <summary>One of the <see cref="CeruleanServerOptions.Accounts"/> accounts the server was
    /// started with, for the caller alone until it disposes it (which empties it and gives it
    /// back); waits while all are leased.</summary>
    /// <exception cref="InvalidOperationException">the server was started without accounts.</exception>
    public async Task<CeruleanAccount> LeaseAccountAsync(CancellationToken cancellationToken = default)
    {
        if (Accounts == 0)
            throw new InvalidOperationException(
                "LeaseAccountAsync needs a server started with CeruleanServerOptions.Accounts above 0");
        await _available.WaitAsync(cancellationToken).ConfigureAwait(false);
        if (!_pool.TryDequeue(out var next)) throw new InvalidOperationException("no free account after a granted lease");
        return new CeruleanAccount(BaseUri, next.Name, next.Key, GiveBack);
    }

    ValueTask GiveBack(CeruleanAccount account)
    {
        _pool.Enqueue((account.Name, account.Key));
        _available.Release();
        return ValueTask.CompletedTask;
    }

    /// <summary>Stops the server (SIGTERM, then SIGKILL after 5 s) and deletes its temporary directory.</summary>
    public async ValueTask DisposeAsync()
    {
        if (Interlocked.Exchange(ref _disposed, 1) != 0) return;
        AppDomain.CurrentDomain.ProcessExit -= OnProcessExit;
        DevelopmentAccount.DisposeClient();
        if (!_process.HasExited)
        {
            Terminate(_process);
            using var wait = new CancellationTokenSource(TimeSpan.FromSeconds(5));
            try
            {
                await _process.WaitForExitAsync(wait.Token).ConfigureAwait(false);
            }
            catch (OperationCanceledException)
            {
                Kill(_process);
            }
        }
        _process.Dispose();
        DeleteDirectory(_temporaryDirectory);
    }

    /// <summary>Stops the server (see <see cref="DisposeAsync"/>).</summary>
    public void Dispose() => DisposeAsync().AsTask().GetAwaiter().GetResult();

    void OnProcessExit(object? sender, EventArgs e)
    {
        Kill(_process);
        DeleteDirectory(_temporaryDirectory);
    }

    [DllImport("libc", EntryPoint = "kill", SetLastError = true)]
    static extern int SendSignal(int pid, int signal);

    // SIGTERM lets the server close its store cleanly (snapshot bookkeeping carries over).
    static void Terminate(Process process)
    {
        if (OperatingSystem.IsWindows() || SendSignal(process.Id, 15) != 0) Kill(process);
    }

    static void Kill(Process process)
    {
        try
        {
            if (!process.HasExited) process.Kill();
            process.WaitForExit(5000);
        }
        catch (InvalidOperationException)
        {
        }
    }

    static void DeleteDirectory(string? dir)
    {
        if (dir == null) return;
        try
        {
            Directory.Delete(dir, recursive: true);
        }
        catch (IOException)
        {
        }
        catch (UnauthorizedAccessException)
        {
        }
    }
}
