namespace Cerulean.Testing;

/// <summary>
/// A ready-made test fixture: an account of its own (<see cref="Account"/>) on a server shared by
/// every <see cref="CeruleanFixture"/> of the test process, started by the first and stopped when
/// the last is disposed. It references no test framework, so xunit v2 and v3 both construct and
/// dispose it: <c>IClassFixture&lt;CeruleanFixture&gt;</c> gives each test class its own account
/// (classes that run at once never see each other's tables, snapshots or fault rules), and
/// <c>ICollectionFixture&lt;CeruleanFixture&gt;</c> one account to the classes of a collection,
/// which xunit runs one after another. A subclass overrides <see cref="SeedAsync"/> to fill the
/// account once, and calls <see cref="Restore"/> (or <see cref="RestoreAsync"/>) to bring it back
/// before a test. Thread-safe.
/// </summary>
public class CeruleanFixture : IAsyncDisposable, IDisposable
{
    const int SharedAccounts = 64;
    const string SeedSnapshot = "fixture-seed";

    static readonly SemaphoreSlim SharedLock = new(1, 1);
    static CeruleanServer? _shared;
    static int _sharedUsers;

    readonly CeruleanServer? _own;
    int _disposed;

    /// <summary>Leases an account on the shared server (starting it if it is the first) and
    /// seeds it.</summary>
    public CeruleanFixture() : this(null)
    {
    }

    /// <summary>Starts a server of this fixture's own with <paramref name="options"/> (its
    /// <see cref="CeruleanServerOptions.Accounts"/> raised to 1 if 0) and seeds an account on
    /// it; null: the shared server.</summary>
    protected CeruleanFixture(CeruleanServerOptions? options)
    {
        // Off the caller's synchronization context: a test framework's own may not allow blocking on it.
        if (options != null)
        {
            if (options.Accounts == 0) options.Accounts = 1;
            Server = _own = Task.Run(() => CeruleanServer.StartAsync(options)).GetAwaiter().GetResult();
        }
        else
        {
            Server = Task.Run(AcquireSharedAsync).GetAwaiter().GetResult();
        }
        try
        {
            Account = Task.Run(() => Server.LeaseAccountAsync()).GetAwaiter().GetResult();
            Task.Run(async () =>
            {
                await SeedAsync(Account).ConfigureAwait(false);
                await Account.SaveSnapshotAsync(SeedSnapshot).ConfigureAwait(false);
            }).GetAwaiter().GetResult();
        }
        catch
        {
            Dispose();
            throw;
        }
    }

    /// <summary>The server the account is on.</summary>
    public CeruleanServer Server { get; }

    /// <summary>This fixture's account: its clients, connection string, reset, snapshots and
    /// fault rules.</summary>
    public CeruleanAccount Account { get; }

    /// <summary>The account's connection string (<see cref="CeruleanAccount.ConnectionString"/>).</summary>
    public string ConnectionString => Account.ConnectionString;

    /// <summary>Fills the account once, before any test: override it to create tables and
    /// entities. It runs inside the base constructor, so it may use the account but not fields
    /// of the subclass. The default does nothing.</summary>
    protected virtual Task SeedAsync(CeruleanAccount account) => Task.CompletedTask;

    /// <summary>Brings the account back to the state <see cref="SeedAsync"/> left and removes
    /// its fault rules.</summary>
    public async Task RestoreAsync(CancellationToken cancellationToken = default)
    {
        await Account.ClearFaultsAsync(cancellationToken).ConfigureAwait(false);
        await Account.RestoreSnapshotAsync(SeedSnapshot, cancellationToken).ConfigureAwait(false);
    }

    /// <summary><see cref="RestoreAsync"/>, blocking: for a test class's constructor.</summary>
    public void Restore() => Task.Run(() => RestoreAsync()).GetAwaiter().GetResult();

    /// <summary>Gives the account back, emptied, and stops the server if this was its last
    /// fixture (or it was this fixture's own).</summary>
    public async ValueTask DisposeAsync()
    {
        if (Interlocked.Exchange(ref _disposed, 1) != 0) return;
        GC.SuppressFinalize(this);
        try
        {
            if (Account != null) await Account.DisposeAsync().ConfigureAwait(false);
        }
        finally
        {
            if (_own != null) await _own.DisposeAsync().ConfigureAwait(false);
            else if (Server != null) await ReleaseSharedAsync().ConfigureAwait(false);
        }
    }

    /// <summary>See <see cref="DisposeAsync"/>.</summary>
    public void Dispose() => Task.Run(() => DisposeAsync().AsTask()).GetAwaiter().GetResult();

    static async Task<CeruleanServer> AcquireSharedAsync()
    {
        await SharedLock.WaitAsync().ConfigureAwait(false);
        try
        {
            _shared ??= await CeruleanServer.StartAsync(new CeruleanServerOptions { Accounts = SharedAccounts })
                                            .ConfigureAwait(false);
            ++_sharedUsers;
            return _shared;
        }
        finally
        {
            SharedLock.Release();
        }
    }

    static async Task ReleaseSharedAsync()
    {
        await SharedLock.WaitAsync().ConfigureAwait(false);
        try
        {
            if (--_sharedUsers > 0 || _shared == null) return;
            CeruleanServer last = _shared;
            _shared = null;
            await last.DisposeAsync().ConfigureAwait(false);
        }
        finally
        {
            SharedLock.Release();
        }
    }
}
