namespace Cerulean.Testing;

/// <summary>Where a started server keeps its tables.</summary>
public enum CeruleanStorage
{
    /// <summary>In the server's memory (<c>--inMemoryPersistence</c>): nothing touches the disk.</summary>
    InMemory,

    /// <summary>In SQLite under a new temporary directory, deleted when the server is disposed.</summary>
    TemporaryDirectory,
}

/// <summary>How <see cref="CeruleanServer.StartAsync"/> starts the server. Every property has a
/// default that suits a test: in memory, on a free port of 127.0.0.1, no access log.</summary>
public sealed class CeruleanServerOptions
{
    /// <summary>The server executable. When null: the environment variable
    /// <c>CERULEAN_BINARY</c>, else the linux-x64 server this package carries.</summary>
    public string? BinaryPath { get; set; }

    /// <summary>Where the tables live when <see cref="Location"/> is null.</summary>
    public CeruleanStorage Storage { get; set; } = CeruleanStorage.InMemory;

    /// <summary>A directory for the SQLite database that outlives the server (<c>--location</c>);
    /// overrides <see cref="Storage"/>.</summary>
    public string? Location { get; set; }

    /// <summary>The port on 127.0.0.1; 0 (the default) lets the system pick a free one.</summary>
    public int Port { get; set; }

    /// <summary>Keep the server's access log (one line per request) and pass it to
    /// <see cref="Output"/>; off by default (<c>--silent</c>).</summary>
    public bool AccessLog { get; set; }

    /// <summary>More command-line arguments, e.g. <c>--faults rules.json</c> or <c>--loose</c>.</summary>
    public IList<string> Arguments { get; } = new List<string>();

    /// <summary>Receives each line the server writes (start-up lines, the access log when on,
    /// errors), e.g. to forward it to xunit's <c>ITestOutputHelper</c>. Called on a thread-pool
    /// thread.</summary>
    public Action<string>? Output { get; set; }

    /// <summary>How many accounts to serve beside the development account, for
    /// <see cref="CeruleanServer.LeaseAccountAsync"/> (default 0).</summary>
    public int Accounts { get; set; }

    /// <summary>How long to wait for the server's start-up line.</summary>
    public TimeSpan StartTimeout { get; set; } = TimeSpan.FromSeconds(30);
}
