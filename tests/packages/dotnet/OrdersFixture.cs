// The fixture of the Cerulean.Testing README: one server for the test class, a table seeded once
// and saved as a snapshot, restored before every test so that each starts from the same state
// whatever the others wrote.
using System.Diagnostics;
using Azure.Data.Tables;
using Cerulean.Testing;
using Xunit;

namespace Cerulean.Testing.Sample;

public sealed class OrdersFixture : IAsyncLifetime
{
    public CeruleanServer Server { get; private set; } = null!;

    /// <summary>From starting the server to the answer of its first request.</summary>
    public TimeSpan StartupToFirstAnswer { get; private set; }

    public async Task InitializeAsync()
    {
        var clock = Stopwatch.StartNew();
        Server = await CeruleanServer.StartAsync();
        await Server.TableServiceClient.QueryAsync().ToListAsync();
        StartupToFirstAnswer = clock.Elapsed;

        TableClient orders = Server.GetTableClient("orders");
        await orders.CreateAsync();
        foreach (var (customer, id, amount) in new[] { ("alice", "001", 10.0), ("alice", "002", 25.5), ("bob", "001", 7.25) })
            await orders.AddEntityAsync(new TableEntity(customer, id) { ["Amount"] = amount, ["Status"] = "open" });
        await Server.SaveSnapshotAsync("orders-seed");
    }

    public async Task DisposeAsync() => await Server.DisposeAsync();
}

static class AsyncPageable
{
    public static async Task<List<T>> ToListAsync<T>(this Azure.AsyncPageable<T> pages) where T : notnull
    {
        var list = new List<T>();
        await foreach (T item in pages) list.Add(item);
        return list;
    }
}
