// Tests a user would write with Cerulean.Testing: Azure.Data.Tables against the packaged server,
// the SDK's retry policy over injected 503s, and the snapshot restored before each test.
using System.Diagnostics;
using Azure;
using Azure.Core;
using Azure.Data.Tables;
using Azure.Data.Tables.Models;
using Cerulean.Testing;
using Xunit;
using Xunit.Abstractions;

namespace Cerulean.Testing.Sample;

public sealed class Order : ITableEntity
{
    public string PartitionKey { get; set; } = "";
    public string RowKey { get; set; } = "";
    public DateTimeOffset? Timestamp { get; set; }
    public ETag ETag { get; set; }
    public double Amount { get; set; }
    public string Status { get; set; } = "";
}

public sealed class OrdersTests : IClassFixture<OrdersFixture>, IAsyncLifetime
{
    readonly OrdersFixture _fixture;
    readonly CeruleanServer _server;
    readonly ITestOutputHelper _output;

    public OrdersTests(OrdersFixture fixture, ITestOutputHelper output)
    {
        _fixture = fixture;
        _server = fixture.Server;
        _output = output;
    }

    // Every test starts from the seeded state, whatever the previous one wrote.
    public Task InitializeAsync() => _server.RestoreSnapshotAsync("orders-seed");

    public Task DisposeAsync() => _server.ClearFaultsAsync();

    TableClient Orders => _server.GetTableClient("orders");

    [Fact]
    public async Task Startup_figures_of_the_packaged_server()
    {
        _output.WriteLine($"fixture: start-up to first answer {_fixture.StartupToFirstAnswer.TotalMilliseconds:F1} ms " +
                          $"(process start to listening {_server.StartupTime.TotalMilliseconds:F1} ms)");
        // A second server in the same process, now that the SDK is loaded and compiled.
        var clock = Stopwatch.StartNew();
        await using CeruleanServer second = await CeruleanServer.StartAsync();
        List<TableItem> tables = await second.TableServiceClient.QueryAsync().ToListAsync();
        TimeSpan warm = clock.Elapsed;
        _output.WriteLine($"second server: start-up to first answer {warm.TotalMilliseconds:F1} ms " +
                          $"(process start to listening {second.StartupTime.TotalMilliseconds:F1} ms)");
        Assert.Empty(tables);
        Assert.NotEqual(_server.Port, second.Port);
        Assert.Single(await _server.TableServiceClient.QueryAsync().ToListAsync());
    }

    [Fact]
    public async Task Linq_queries_run_on_the_server()
    {
        List<Order> alice = await Orders.QueryAsync<Order>(o => o.PartitionKey == "alice").ToListAsync();
        Assert.Equal(new[] { "001", "002" }, alice.Select(o => o.RowKey));

        List<Order> large = await Orders.QueryAsync<Order>(o => o.Amount > 8.0 && o.Status == "open").ToListAsync();
        Assert.Equal(new[] { "alice/001", "alice/002" }, large.Select(o => $"{o.PartitionKey}/{o.RowKey}"));

        string filter = TableClient.CreateQueryFilter<Order>(o => o.PartitionKey == "bob" && o.RowKey.CompareTo("001") >= 0);
        Order bob = Assert.Single(await Orders.QueryAsync<Order>(filter).ToListAsync());
        Assert.Equal(7.25, bob.Amount);
    }

    [Fact]
    public async Task Writes_follow_etags_and_transactions()
    {
        Response<Order> read = await Orders.GetEntityAsync<Order>("alice", "001");
        Order order = read.Value;
        order.Status = "paid";
        await Orders.UpdateEntityAsync(order, order.ETag, TableUpdateMode.Replace);
        var stale = await Assert.ThrowsAsync<RequestFailedException>(
            () => Orders.UpdateEntityAsync(order, read.Value.ETag, TableUpdateMode.Replace));
        Assert.Equal(412, stale.Status);

        await Orders.SubmitTransactionAsync(new[]
        {
            new TableTransactionAction(TableTransactionActionType.Add, new TableEntity("carol", "001") { ["Amount"] = 1.0 }),
            new TableTransactionAction(TableTransactionActionType.Add, new TableEntity("carol", "002") { ["Amount"] = 2.0 }),
        });
        Assert.Equal(2, (await Orders.QueryAsync<TableEntity>(e => e.PartitionKey == "carol").ToListAsync()).Count);
    }

    [Fact]
    public async Task The_snapshot_brings_back_the_seed_before_each_test()
    {
        // Whatever ran before, the seed is all there is.
        List<Order> all = await Orders.QueryAsync<Order>().ToListAsync();
        Assert.Equal(new[] { "alice/001", "alice/002", "bob/001" }, all.Select(o => $"{o.PartitionKey}/{o.RowKey}"));
        Assert.All(all, o => Assert.Equal("open", o.Status));
        Assert.Equal(new[] { "orders" }, (await _server.TableServiceClient.QueryAsync().ToListAsync()).Select(t => t.Name));

        // Writes of this test, undone by the next restore.
        await Orders.DeleteEntityAsync("bob", "001");
        await _server.TableServiceClient.CreateTableAsync("scratch");
        SnapshotRestoreResult restored = await _server.RestoreSnapshotAsync("orders-seed");
        Assert.Equal("orders-seed", restored.Name);
        Assert.Equal(3, (await Orders.QueryAsync<Order>().ToListAsync()).Count);
        Assert.Equal(new[] { "orders" }, (await _server.TableServiceClient.QueryAsync().ToListAsync()).Select(t => t.Name));
    }

    [Fact]
    public async Task Snapshots_are_listed_saved_and_deleted()
    {
        SnapshotInfo seed = Assert.Single(await _server.ListSnapshotsAsync(), s => s.Name == "orders-seed");
        Assert.Equal(1, seed.Tables);
        Assert.Equal(3, seed.Entities);

        await Orders.AddEntityAsync(new TableEntity("dave", "001"));
        SnapshotInfo saved = await _server.SaveSnapshotAsync("four-orders");
        Assert.Equal(4, saved.Entities);
        Assert.True(saved.Created > DateTimeOffset.UtcNow.AddMinutes(-5));
        await _server.DeleteSnapshotAsync("four-orders");
        Assert.DoesNotContain(await _server.ListSnapshotsAsync(), s => s.Name == "four-orders");

        var missing = await Assert.ThrowsAsync<RequestFailedException>(() => _server.RestoreSnapshotAsync("four-orders"));
        Assert.Equal(404, missing.Status);
        Assert.Equal("ResourceNotFound", missing.ErrorCode);
    }

    [Fact]
    public async Task Reset_deletes_every_table()
    {
        await _server.ResetAsync();
        Assert.Empty(await _server.TableServiceClient.QueryAsync().ToListAsync());
    }

    [Fact]
    public async Task The_sdk_retry_policy_rides_out_injected_503s()
    {
        FaultRuleStatus set = Assert.Single(await _server.SetFaultsAsync(new FaultRule
        {
            Operation = "InsertEntity", Table = "orders", Status = 503, Code = "ServerBusy", Count = 2,
        }));
        Assert.Equal((0L, 0L, "devstoreaccount1", 2L), (set.Matched, set.Fired, set.Account, set.Rule.Count!.Value));
        var options = new TableClientOptions();
        options.Retry.Mode = RetryMode.Fixed;
        options.Retry.Delay = TimeSpan.FromMilliseconds(10);
        options.Retry.MaxRetries = 3;
        TableClient orders = _server.GetTableClient("orders", options);

        await orders.AddEntityAsync(new TableEntity("erin", "001") { ["Amount"] = 3.0 });

        FaultRuleStatus rule = Assert.Single(await _server.GetFaultsAsync());
        Assert.Equal(2, rule.Fired);  // two attempts answered 503, the third went through
        Assert.Equal(2, rule.Matched);  // a spent rule matches no more
        Assert.Equal(3.0, (await orders.GetEntityAsync<TableEntity>("erin", "001")).Value.GetDouble("Amount"));
    }

    [Fact]
    public async Task A_fault_outlasting_the_retries_reaches_the_caller()
    {
        await _server.SetFaultsAsync(FaultRule.Error("QueryEntities", 503, "ServerBusy"));
        var options = new TableClientOptions();
        options.Retry.Delay = TimeSpan.FromMilliseconds(5);
        options.Retry.MaxRetries = 2;
        var error = await Assert.ThrowsAsync<RequestFailedException>(
            () => _server.GetTableClient("orders", options).QueryAsync<Order>().ToListAsync());
        Assert.Equal(503, error.Status);
        Assert.Equal("ServerBusy", error.ErrorCode);
        Assert.Equal(3, Assert.Single(await _server.GetFaultsAsync()).Fired);

        await _server.ClearFaultsAsync();
        Assert.Empty(await _server.GetFaultsAsync());
        Assert.Equal(3, (await Orders.QueryAsync<Order>().ToListAsync()).Count);
    }

    [Fact]
    public async Task A_refused_rule_says_why()
    {
        var error = await Assert.ThrowsAsync<RequestFailedException>(
            () => _server.SetFaultsAsync(new FaultRule { Operation = "NoSuchOperation", Status = 503, Code = "ServerBusy" }));
        Assert.Equal(400, error.Status);
        Assert.Contains("NoSuchOperation", error.Message);
    }
}

public sealed class ServerLifecycleTests
{
    [Fact]
    public void The_packaged_server_is_found_and_executable()
    {
        string binary = CeruleanBinary.Resolve();
        Assert.EndsWith(Path.Combine("runtimes", "linux-x64", "native", "cerulean"), binary);
        Assert.True(File.Exists(binary));
    }

    [Fact]
    public async Task A_missing_binary_is_named_in_the_error()
    {
        var options = new CeruleanServerOptions { BinaryPath = "/nonexistent/cerulean" };
        var error = await Assert.ThrowsAsync<CeruleanBinaryNotFoundException>(() => CeruleanServer.StartAsync(options));
        Assert.Contains("/nonexistent/cerulean", error.Message);
        Assert.Contains("BinaryPath", error.Message);
    }

    [Fact]
    public async Task A_location_keeps_the_tables_across_servers()
    {
        string dir = Directory.CreateTempSubdirectory("cerulean-sample-").FullName;
        try
        {
            var options = new CeruleanServerOptions { Location = dir };
            await using (CeruleanServer first = await CeruleanServer.StartAsync(options))
            {
                TableClient t = first.GetTableClient("kept");
                await t.CreateAsync();
                await t.AddEntityAsync(new TableEntity("p", "r") { ["Value"] = 42 });
            }
            Assert.True(File.Exists(Path.Combine(dir, "cerulean.sqlite")));
            await using CeruleanServer second = await CeruleanServer.StartAsync(options);
            TableEntity e = await second.GetTableClient("kept").GetEntityAsync<TableEntity>("p", "r");
            Assert.Equal(42, e.GetInt32("Value"));
        }
        finally
        {
            Directory.Delete(dir, recursive: true);
        }
    }

    [Fact]
    public async Task Dispose_stops_the_server()
    {
        CeruleanServer server = await CeruleanServer.StartAsync(new CeruleanServerOptions { Storage = CeruleanStorage.TemporaryDirectory });
        int pid = server.ProcessId;
        await server.TableServiceClient.CreateTableAsync("gone");
        await server.DisposeAsync();
        Assert.Throws<ArgumentException>(() => Process.GetProcessById(pid));
        var options = new TableClientOptions();
        options.Retry.MaxRetries = 0;
        await Assert.ThrowsAnyAsync<Exception>(() => server.CreateTableServiceClient(options).QueryAsync().ToListAsync());
    }
}
