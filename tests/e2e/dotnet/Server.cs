// Starts the real Cerulean binary once for the whole test collection and stops it afterwards.
//
// The binary is $CERULEAN_BIN, or <repo>/${BUILD_DIR:-build}/cerulean. It listens on 127.0.0.1
// with --tablePort 0 (the kernel picks a free port), in memory; the port is read from the
// start-up line "Cerulean Table service is successfully listening at http://HOST:PORT".
using System.Diagnostics;
using System.Text.RegularExpressions;
using Xunit;

namespace Cerulean.E2E;

public sealed class ServerFixture : IDisposable
{
    public const string Account = "devstoreaccount1";
    public const string Key =
        "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
    static readonly Regex Ready =
        new(@"Cerulean Table service is successfully listening at http://(\[[^\]]+\]|[^\s:]+):(\d+)");

    readonly Process _process;

    public string Host { get; }
    public int Port { get; }
    /// <summary>http://host:port/devstoreaccount1 — the path-style table endpoint.</summary>
    public string Endpoint => $"http://{Host}:{Port}/{Account}";
    public string ConnectionString =>
        $"DefaultEndpointsProtocol=http;AccountName={Account};AccountKey={Key};TableEndpoint={Endpoint};";

    public ServerFixture() : this(0) { }

    /// <summary>Starts a server on <paramref name="port"/> (0: a free one). Used directly by a test
    /// that needs the default port; xunit's fixture uses the public constructor.</summary>
    internal ServerFixture(int port)
    {
        string bin = Environment.GetEnvironmentVariable("CERULEAN_BIN");
        if (string.IsNullOrEmpty(bin))
            bin = Path.Combine(RepoRoot(), Environment.GetEnvironmentVariable("BUILD_DIR") ?? "build", "cerulean");
        bin = Path.GetFullPath(bin);
        if (!File.Exists(bin))
            throw new FileNotFoundException($"Cerulean binary not found at {bin} (set CERULEAN_BIN or build first)");

        var psi = new ProcessStartInfo(bin)
        {
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        foreach (var a in new[] { "--tableHost", "127.0.0.1", "--tablePort", port.ToString(), "--silent", "--inMemoryPersistence" })
            psi.ArgumentList.Add(a);
        _process = Process.Start(psi)!;

        var ready = new TaskCompletionSource<Match>(TaskCreationOptions.RunContinuationsAsynchronously);
        var stderr = new System.Text.StringBuilder();
        // Keep draining both pipes so the server never blocks on a full one.
        _process.OutputDataReceived += (_, e) =>
        {
            if (e.Data is null) { ready.TrySetException(new Exception($"cerulean exited before listening: {stderr}")); return; }
            var m = Ready.Match(e.Data);
            if (m.Success) ready.TrySetResult(m);
        };
        _process.ErrorDataReceived += (_, e) => { if (e.Data is not null) lock (stderr) stderr.AppendLine(e.Data); };
        _process.BeginOutputReadLine();
        _process.BeginErrorReadLine();
        if (!ready.Task.Wait(TimeSpan.FromSeconds(20)))
        {
            Stop();
            throw new TimeoutException($"cerulean did not print its start-up line within 20 s: {stderr}");
        }
        var match = ready.Task.Result;
        Host = match.Groups[1].Value;
        Port = int.Parse(match.Groups[2].Value);
    }

    static string RepoRoot()
    {
        // bin/Debug/net10.0 under tests/e2e/dotnet: walk up to the directory holding CMakeLists.txt.
        for (var d = new DirectoryInfo(AppContext.BaseDirectory); d != null; d = d.Parent)
            if (File.Exists(Path.Combine(d.FullName, "CMakeLists.txt")) && Directory.Exists(Path.Combine(d.FullName, "server")))
                return d.FullName;
        throw new DirectoryNotFoundException("repository root not found above " + AppContext.BaseDirectory);
    }

    /// <summary>A table name no other test uses: a letter first, then letters and digits.</summary>
    public static string UniqueTable(string prefix) =>
        (prefix + Guid.NewGuid().ToString("N"))[..Math.Min(63, prefix.Length + 12)];

    void Stop()
    {
        if (_process.HasExited) return;
        _process.Kill();  // SIGKILL is fine: the store is in memory
        _process.WaitForExit(10000);
    }

    public void Dispose()
    {
        Stop();
        _process.Dispose();
    }
}

[CollectionDefinition("server")]
public sealed class ServerCollection : ICollectionFixture<ServerFixture> { }
