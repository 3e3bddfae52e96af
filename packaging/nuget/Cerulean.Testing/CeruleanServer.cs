using System.Diagnostics;
using System.Runtime.InteropServices;
using System.Text;
using System.Text.Json.Nodes;
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
    readonly AdminClient _admin;
    readonly string? _temporaryDirectory;
    readonly Lazy<TableServiceClient> _serviceClient;
    int _disposed;

    CeruleanServer(Process process, Uri serviceUri, TimeSpan startupTime, string? temporaryDirectory)
    {
        _process = process;
        ServiceUri = serviceUri;
        StartupTime = startupTime;
        _temporaryDirectory = temporaryDirectory;
        _admin = new AdminClient(new Uri($"{serviceUri.Scheme}://{serviceUri.Authority}/"), Account, Key);
        _serviceClient = new Lazy<TableServiceClient>(() => CreateTableServiceClient());
    }

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

    /// <summary>A client for this server with the SDK's default options (created once).</summary>
    public TableServiceClient TableServiceClient => _serviceClient.Value;

    /// <summary>A new client for this server, e.g. with a retry policy of its own.</summary>
    public TableServiceClient CreateTableServiceClient(TableClientOptions? options = null) =>
        new(ConnectionString, options ?? new TableClientOptions());

    /// <summary>A client for one table of this server.</summary>
    public TableClient GetTableClient(string tableName, TableClientOptions? options = null) =>
        options == null ? TableServiceClient.GetTableClient(tableName)
                        : new TableClient(ConnectionString, tableName, options);

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
        var server = new CeruleanServer(process, serviceUri, clock.Elapsed, temporary);
        // A test host that exits without disposing the server still stops it.
        AppDomain.CurrentDomain.ProcessExit += server.OnProcessExit;
        return server;
    }

    /// <summary>Starts a server and waits until it listens (see <see cref="StartAsync"/>).</summary>
    public static CeruleanServer Start(CeruleanServerOptions? options = null) =>
        StartAsync(options).GetAwaiter().GetResult();

    /// <summary>Deletes every table of the account at once (snapshots stay).</summary>
    public Task ResetAsync(CancellationToken cancellationToken = default) =>
        _admin.SendAsync(HttpMethod.Post, $"/_reset/{Account}", null, cancellationToken);

    /// <summary>Saves the account's tables, entities (with their ETags and Timestamps), ACLs and
    /// service properties as <paramref name="name"/>, replacing a snapshot of that name.</summary>
    public async Task<SnapshotInfo> SaveSnapshotAsync(string name, CancellationToken cancellationToken = default)
    {
        JsonNode j = (await _admin.SendAsync(HttpMethod.Put, SnapshotPath(name), null, cancellationToken)
                          .ConfigureAwait(false))!;
        return ParseSnapshot(j);
    }

    /// <summary>Brings the account back to exactly the state saved as <paramref name="name"/>,
    /// atomically; costs what was written since, not the size of the account.</summary>
    /// <exception cref="Azure.RequestFailedException">404 when there is no such snapshot.</exception>
    public async Task<SnapshotRestoreResult> RestoreSnapshotAsync(string name, CancellationToken cancellationToken = default)
    {
        JsonNode j = (await _admin.SendAsync(HttpMethod.Post, SnapshotPath(name) + "/restore", null, cancellationToken)
                          .ConfigureAwait(false))!;
        return new SnapshotRestoreResult((string)j["name"]!, (long)j["tablesKept"]!, (long)j["tablesPatched"]!,
                                         (long)j["tablesCopied"]!, (long)j["entitiesCopied"]!);
    }

    /// <summary>The account's snapshots.</summary>
    public async Task<IReadOnlyList<SnapshotInfo>> ListSnapshotsAsync(CancellationToken cancellationToken = default)
    {
        JsonNode j = (await _admin.SendAsync(HttpMethod.Get, $"/_snapshots/{Account}", null, cancellationToken)
                          .ConfigureAwait(false))!;
        return j["snapshots"]!.AsArray().Select(s => ParseSnapshot(s!)).ToList();
    }

    /// <summary>Deletes a snapshot.</summary>
    /// <exception cref="Azure.RequestFailedException">404 when there is no such snapshot.</exception>
    public Task DeleteSnapshotAsync(string name, CancellationToken cancellationToken = default) =>
        _admin.SendAsync(HttpMethod.Delete, SnapshotPath(name), null, cancellationToken);

    /// <summary>Replaces the account's fault rules; they are tried in order, the first that
    /// matches and fires decides.</summary>
    /// <exception cref="Azure.RequestFailedException">400 <c>InvalidInput</c> for a rule the server
    /// refuses (its message names the rule and the field).</exception>
    public Task SetFaultsAsync(IEnumerable<FaultRule> rules, CancellationToken cancellationToken = default)
    {
        var array = new JsonArray();
        foreach (FaultRule r in rules) array.Add(r.ToJson());
        return _admin.SendAsync(HttpMethod.Put, $"/_faults/{Account}", new JsonObject { ["rules"] = array },
                                cancellationToken);
    }

    /// <summary>Sets one fault rule (replacing the others).</summary>
    public Task SetFaultsAsync(params FaultRule[] rules) => SetFaultsAsync((IEnumerable<FaultRule>)rules);

    /// <summary>The account's fault rules with how often each matched and fired.</summary>
    public async Task<IReadOnlyList<FaultRule>> GetFaultsAsync(CancellationToken cancellationToken = default)
    {
        JsonNode j = (await _admin.SendAsync(HttpMethod.Get, $"/_faults/{Account}", null, cancellationToken)
                          .ConfigureAwait(false))!;
        return j["rules"]!.AsArray().Select(r => FaultRule.FromJson(r!)).ToList();
    }

    /// <summary>Removes the account's fault rules.</summary>
    public Task ClearFaultsAsync(CancellationToken cancellationToken = default) =>
        _admin.SendAsync(HttpMethod.Delete, $"/_faults/{Account}", null, cancellationToken);

    static string SnapshotPath(string name) => $"/_snapshots/{Account}/{Uri.EscapeDataString(name)}";

    static SnapshotInfo ParseSnapshot(JsonNode j) =>
        new((string)j["name"]!, DateTimeOffset.Parse((string)j["created"]!, System.Globalization.CultureInfo.InvariantCulture),
            (long)j["tables"]!, (long)j["entities"]!);

    /// <summary>Stops the server (SIGTERM, then SIGKILL after 5 s) and deletes its temporary directory.</summary>
    public async ValueTask DisposeAsync()
    {
        if (Interlocked.Exchange(ref _disposed, 1) != 0) return;
        AppDomain.CurrentDomain.ProcessExit -= OnProcessExit;
        _admin.Dispose();
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
