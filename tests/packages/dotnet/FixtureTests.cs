// The ready-made CeruleanFixture as a user's test class takes it: no fixture code of the user's.
// The first class below is all a user writes; the others check what the fixture promises.
using Azure.Data.Tables;
using Cerulean.Testing;
using Xunit;

namespace Cerulean.Testing.Sample;

public sealed class ReadyMadeFixtureTests(CeruleanFixture cerulean) : IClassFixture<CeruleanFixture>
{
    [Fact]
    public async Task A_class_gets_an_account_of_its_own()
    {
        TableClient orders = cerulean.Account.GetTableClient("orders");
        await orders.CreateIfNotExistsAsync();
        await orders.AddEntityAsync(new TableEntity("alice", Guid.NewGuid().ToString()));
    }
}

// Seeded once, restored before each test: a subclass overrides SeedAsync.
public sealed class SeededFixture : CeruleanFixture
{
    protected override async Task SeedAsync(CeruleanAccount account)
    {
        TableClient orders = account.GetTableClient("orders");
        await orders.CreateAsync();
        await orders.AddEntityAsync(new TableEntity("alice", "001") { ["Amount"] = 10.0 });
    }
}

public sealed class SeededFixtureTests : IClassFixture<SeededFixture>, IClassFixture<CeruleanFixture>
{
    readonly SeededFixture _seeded;
    readonly CeruleanFixture _other;

    public SeededFixtureTests(SeededFixture seeded, CeruleanFixture other)
    {
        _seeded = seeded;
        _other = other;
        seeded.Restore();
    }

    async Task<List<string>> Rows(CeruleanAccount account)
    {
        var rows = new List<string>();
        await foreach (TableEntity e in account.GetTableClient("orders").QueryAsync<TableEntity>())
            rows.Add($"{e.PartitionKey}/{e.RowKey}");
        return rows;
    }

    [Theory]
    [InlineData(1)]
    [InlineData(2)]
    public async Task Each_test_starts_from_the_seed(int run)
    {
        Assert.Equal(new[] { "alice/001" }, await Rows(_seeded.Account));
        await _seeded.Account.GetTableClient("orders").AddEntityAsync(new TableEntity("bob", $"{run}"));
        Assert.Equal(2, (await Rows(_seeded.Account)).Count);
    }

    [Fact]
    public async Task Fixtures_share_one_server_with_an_account_each()
    {
        Assert.Same(_seeded.Server, _other.Server);
        Assert.NotEqual(_seeded.Account.Name, _other.Account.Name);
        Assert.NotEqual(CeruleanServer.Account, _seeded.Account.Name);
        Assert.Contains($"AccountName={_seeded.Account.Name};", _seeded.ConnectionString);
        // A table, a reset and a fault rule of one account are not seen by the other.
        Assert.Empty(await _other.Account.TableServiceClient.QueryAsync(t => t.Name == "orders").ToListAsync());
        FaultRuleStatus rule = Assert.Single(await _other.Account.SetFaultsAsync(FaultRule.Error("QueryEntities", 503, "ServerBusy")));
        Assert.Equal(_other.Account.Name, rule.Account);
        Assert.Single(await Rows(_seeded.Account));
        await _other.Account.ResetAsync();
        Assert.Single(await Rows(_seeded.Account));
        await _other.Account.ClearFaultsAsync();
    }
}

public sealed class AccountLeaseTests
{
    [Fact]
    public async Task A_released_account_comes_back_empty_and_a_lease_waits_while_all_are_out()
    {
        await using CeruleanServer server = await CeruleanServer.StartAsync(new CeruleanServerOptions { Accounts = 1 });
        CeruleanAccount first = await server.LeaseAccountAsync();
        await first.GetTableClient("leased").CreateAsync();
        await first.SaveSnapshotAsync("s");
        await first.SetFaultsAsync(FaultRule.Error("QueryEntities", 500, "InternalError"));
        Task<CeruleanAccount> waiting = server.LeaseAccountAsync();
        Assert.False(waiting.IsCompleted);
        await first.DisposeAsync();
        await using CeruleanAccount second = await waiting;
        Assert.Equal(first.Name, second.Name);
        Assert.Empty(await second.TableServiceClient.QueryAsync().ToListAsync());
        Assert.Empty(await second.ListSnapshotsAsync());
        Assert.Empty(await second.GetFaultsAsync());
    }

    [Fact]
    public async Task A_server_without_accounts_says_how_to_get_some()
    {
        await using CeruleanServer server = await CeruleanServer.StartAsync();
        var error = await Assert.ThrowsAsync<InvalidOperationException>(() => server.LeaseAccountAsync());
        Assert.Contains("CeruleanServerOptions.Accounts", error.Message);
    }
}
