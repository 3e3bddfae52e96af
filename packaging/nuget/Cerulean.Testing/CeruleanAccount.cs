using System.Text.Json.Nodes;
using Azure.Data.Tables;

namespace Cerulean.Testing;

/// <summary>
/// One account of a running <see cref="CeruleanServer"/>: the development account
/// (<see cref="CeruleanServer.DevelopmentAccount"/>) or one from
/// <see cref="CeruleanServer.LeaseAccountAsync"/>. Its clients, reset, snapshots and fault rules
/// act on this account alone, so tests holding different accounts of one server never see each
/// other's tables. Thread-safe.
/// </summary>
public sealed class CeruleanAccount : IAsyncDisposable
{
    readonly AdminClient _admin;
    readonly Lazy<TableServiceClient> _serviceClient;
    Func<CeruleanAccount, ValueTask>? _release;

    internal CeruleanAccount(Uri serverUri, string name, string key, Func<CeruleanAccount, ValueTask>? release)
    {
        Name = name;
        Key = key;
        ServiceUri = new Uri(serverUri, name);
        _admin = new AdminClient(serverUri, name, key);
        _serviceClient = new Lazy<TableServiceClient>(() => CreateTableServiceClient());
        _release = release;
    }

    /// <summary>The account name, e.g. <c>devstoreaccount1</c> or <c>cerulean3</c>.</summary>
    public string Name { get; }

    /// <summary>The account's key (base64).</summary>
    public string Key { get; }

    /// <summary>The table endpoint, <c>http://127.0.0.1:PORT/NAME</c>.</summary>
    public Uri ServiceUri { get; }

    /// <summary>A connection string for any Azure Tables SDK.</summary>
    public string ConnectionString =>
        $"DefaultEndpointsProtocol={ServiceUri.Scheme};AccountName={Name};AccountKey={Key};TableEndpoint={ServiceUri};";

    /// <summary>A client for this account with the SDK's default options (created once).</summary>
    public TableServiceClient TableServiceClient => _serviceClient.Value;

    /// <summary>A new client for this account, e.g. with a retry policy of its own.</summary>
    public TableServiceClient CreateTableServiceClient(TableClientOptions? options = null) =>
        new(ConnectionString, options ?? new TableClientOptions());

    /// <summary>A client for one table of this account.</summary>
    public TableClient GetTableClient(string tableName, TableClientOptions? options = null) =>
        options == null ? TableServiceClient.GetTableClient(tableName)
                        : new TableClient(ConnectionString, tableName, options);

    /// <summary>Deletes every table of the account at once (snapshots stay).</summary>
    public Task ResetAsync(CancellationToken cancellationToken = default) =>
        _admin.SendAsync(HttpMethod.Post, $"/_reset/{Name}", null, cancellationToken);

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
        JsonNode j = (await _admin.SendAsync(HttpMethod.Get, $"/_snapshots/{Name}", null, cancellationToken)
                          .ConfigureAwait(false))!;
        return j["snapshots"]!.AsArray().Select(s => ParseSnapshot(s!)).ToList();
    }

    /// <summary>Deletes a snapshot.</summary>
    /// <exception cref="Azure.RequestFailedException">404 when there is no such snapshot.</exception>
    public Task DeleteSnapshotAsync(string name, CancellationToken cancellationToken = default) =>
        _admin.SendAsync(HttpMethod.Delete, SnapshotPath(name), null, cancellationToken);

    /// <summary>Replaces the account's fault rules (tried in order, the first that matches and
    /// fires decides) and returns them as the server lists them, with their counters.</summary>
    /// <exception cref="Azure.RequestFailedException">400 <c>InvalidInput</c> for a rule the server
    /// refuses (its message names the rule and the field).</exception>
    public async Task<IReadOnlyList<FaultRuleStatus>> SetFaultsAsync(IEnumerable<FaultRule> rules,
                                                                     CancellationToken cancellationToken = default)
    {
        var array = new JsonArray();
        foreach (FaultRule r in rules) array.Add(r.ToJson());
        JsonNode j = (await _admin.SendAsync(HttpMethod.Put, $"/_faults/{Name}", new JsonObject { ["rules"] = array },
                                             cancellationToken).ConfigureAwait(false))!;
        return ParseRules(j);
    }

    /// <summary>Replaces the account's fault rules with these (see the other overload).</summary>
    public Task<IReadOnlyList<FaultRuleStatus>> SetFaultsAsync(params FaultRule[] rules) =>
        SetFaultsAsync((IEnumerable<FaultRule>)rules);

    /// <summary>The account's fault rules with how often each matched and fired.</summary>
    public async Task<IReadOnlyList<FaultRuleStatus>> GetFaultsAsync(CancellationToken cancellationToken = default)
    {
        JsonNode j = (await _admin.SendAsync(HttpMethod.Get, $"/_faults/{Name}", null, cancellationToken)
                          .ConfigureAwait(false))!;
        return ParseRules(j);
    }

    /// <summary>Removes the account's fault rules.</summary>
    public Task ClearFaultsAsync(CancellationToken cancellationToken = default) =>
        _admin.SendAsync(HttpMethod.Delete, $"/_faults/{Name}", null, cancellationToken);

    /// <summary>A leased account: empties it (tables, snapshots, fault rules) and gives it back to
    /// its server. Nothing for the development account, or an account already released.</summary>
    public async ValueTask DisposeAsync()
    {
        Func<CeruleanAccount, ValueTask>? release = Interlocked.Exchange(ref _release, null);
        if (release == null) return;
        try
        {
            await ClearFaultsAsync().ConfigureAwait(false);
            await ResetAsync().ConfigureAwait(false);
            foreach (SnapshotInfo s in await ListSnapshotsAsync().ConfigureAwait(false))
                await DeleteSnapshotAsync(s.Name).ConfigureAwait(false);
        }
        finally
        {
            _admin.Dispose();
            await release(this).ConfigureAwait(false);
        }
    }

    internal void DisposeClient() => _admin.Dispose();

    string SnapshotPath(string name) => $"/_snapshots/{Name}/{Uri.EscapeDataString(name)}";

    static SnapshotInfo ParseSnapshot(JsonNode j) =>
        new((string)j["name"]!, DateTimeOffset.Parse((string)j["created"]!, System.Globalization.CultureInfo.InvariantCulture),
            (long)j["tables"]!, (long)j["entities"]!);

    static IReadOnlyList<FaultRuleStatus> ParseRules(JsonNode j) =>
        j["rules"]!.AsArray().Select(r => FaultRuleStatus.FromJson(r!)).ToList();
}
