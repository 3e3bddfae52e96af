// The AppHost of tests/packages/aspire run as Aspire.Hosting.Testing runs it: Cerulean starts as
// an executable, the worker writes through the injected connection string, the test reads it back.
using Aspire.Hosting;
using Aspire.Hosting.ApplicationModel;
using Aspire.Hosting.Testing;
using Azure.Data.Tables;
using Microsoft.Extensions.DependencyInjection;
using Xunit;

public sealed class AppHostTests
{
    [Fact]
    public async Task A_referenced_project_writes_through_the_injected_connection_string()
    {
        using var timeout = new CancellationTokenSource(TimeSpan.FromMinutes(3));
        IDistributedApplicationTestingBuilder builder =
            await DistributedApplicationTestingBuilder.CreateAsync<Projects.AppHost>(timeout.Token);
        await using DistributedApplication app = await builder.BuildAsync(timeout.Token);
        await app.StartAsync(timeout.Token);

        ResourceNotificationService notifications = app.Services.GetRequiredService<ResourceNotificationService>();
        await notifications.WaitForResourceHealthyAsync("tables", timeout.Token);
        ResourceEvent worker = await notifications.WaitForResourceAsync(
            "worker", e => KnownResourceStates.TerminalStates.Contains(e.Snapshot.State?.Text), timeout.Token);
        Assert.Equal(0, worker.Snapshot.ExitCode);

        string? connection = await app.GetConnectionStringAsync("tables", timeout.Token);
        Assert.NotNull(connection);
        Assert.Contains("TableEndpoint=http://", connection);
        Assert.Contains("AccountName=devstoreaccount1;", connection);
        TableEntity written = (await new TableClient(connection, "written")
            .GetEntityAsync<TableEntity>("worker", "1", cancellationToken: timeout.Token)).Value;
        Assert.Equal("WithReference", written.GetString("Via"));
    }

    // Two AppHost runs on one data directory: the seed is loaded, a write of the first run is
    // there in the second; the fixed port is the connection string's; WithBlobsAndQueues adds the
    // given endpoints to the same connection string.
    [Fact]
    public async Task Data_directory_seed_port_and_a_composed_connection_string()
    {
        using var timeout = new CancellationTokenSource(TimeSpan.FromMinutes(4));
        string root = Directory.CreateTempSubdirectory("cerulean-aspire-").FullName;
        try
        {
            string seed = Directory.CreateDirectory(Path.Combine(root, "seed")).FullName;
            File.WriteAllText(Path.Combine(seed, "orders.jsonl"),
                "{\"table\":\"orders\",\"entity\":{\"PartitionKey\":\"alice\",\"RowKey\":\"001\",\"Amount\":10.5}}\n");
            string data = Path.Combine(root, "data");
            int port = FreePort();

            string first = await RunOnce(data, seed, port, async (connection) =>
            {
                var orders = new TableClient(connection, "orders");
                TableEntity alice = (await orders.GetEntityAsync<TableEntity>("alice", "001", cancellationToken: timeout.Token)).Value;
                Assert.Equal(10.5, alice.GetDouble("Amount"));
                await orders.AddEntityAsync(new TableEntity("bob", "001"), timeout.Token);
            }, timeout.Token);
            Assert.Matches($"TableEndpoint=http://[^:;]+:{port}/devstoreaccount1;", first);
            Assert.Matches("BlobEndpoint=http://[^;]+:[0-9]+/devstoreaccount1;QueueEndpoint=http://[^;]+:[0-9]+/devstoreaccount1;", first);

            await RunOnce(data, null, port, async (connection) =>
            {
                var orders = new TableClient(connection, "orders");
                var keys = new List<string>();
                await foreach (TableEntity e in orders.QueryAsync<TableEntity>(cancellationToken: timeout.Token))
                    keys.Add($"{e.PartitionKey}/{e.RowKey}");
                Assert.Equal(new[] { "alice/001", "bob/001" }, keys);
            }, timeout.Token);
        }
        finally
        {
            Directory.Delete(root, recursive: true);
        }
    }

    // Starts the AppHost with one more Cerulean resource, "disk", runs `use` on its connection
    // string, and returns that string.
    static async Task<string> RunOnce(string data, string? seed, int port, Func<string, Task> use, CancellationToken ct)
    {
        // The testing builder moves fixed ports to random ones unless told not to.
        IDistributedApplicationTestingBuilder builder = await DistributedApplicationTestingBuilder.CreateAsync<Projects.AppHost>(
            ["--DcpPublisher:RandomizePorts=false"], ct);
        var other = builder.AddCerulean("other");
        var disk = builder.AddCerulean("disk", port: port).WithDataDirectory(data)
            .WithBlobsAndQueues(other.GetEndpoint("tables"), other.GetEndpoint("tables"));
        if (seed != null) disk.WithSeed(seed);
        await using DistributedApplication app = await builder.BuildAsync(ct);
        await app.StartAsync(ct);
        await app.Services.GetRequiredService<ResourceNotificationService>().WaitForResourceHealthyAsync("disk", ct);
        string connection = (await app.GetConnectionStringAsync("disk", ct))!;
        await use(connection);
        await app.StopAsync(ct);
        return connection;
    }

    static int FreePort()
    {
        var listener = new System.Net.Sockets.TcpListener(System.Net.IPAddress.Loopback, 0);
        listener.Start();
        int port = ((System.Net.IPEndPoint)listener.LocalEndpoint).Port;
        listener.Stop();
        return port;
    }
}
