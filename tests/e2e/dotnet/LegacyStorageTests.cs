// WindowsAzure.Storage (9.3.x; its netstandard build has asynchronous calls only and no LINQ provider):
// the same patterns through TableQuery<T> string filters, TableBatchOperation and segmented queries.
using Microsoft.WindowsAzure.Storage;
using Microsoft.WindowsAzure.Storage.Auth;
using Microsoft.WindowsAzure.Storage.Shared.Protocol;
using Microsoft.WindowsAzure.Storage.Table;
using Xunit;

namespace Cerulean.E2E;

[Collection("server")]
public sealed class LegacyStorageTests
{
    readonly ServerFixture _server;
    readonly CloudTableClient _client;

    public LegacyStorageTests(ServerFixture server)
    {
        _server = server;
        _client = CloudStorageAccount.Parse(server.ConnectionString).CreateCloudTableClient();
    }

    async Task<CloudTable> NewTable(string prefix, CloudTableClient client = null)
    {
        var table = (client ?? _client).GetTableReference(ServerFixture.UniqueTable(prefix));
        Assert.True(await table.CreateIfNotExistsAsync());
        return table;
    }

    static async Task<List<T>> All<T>(TableQuery<T> query, CloudTable table) where T : ITableEntity, new()
    {
        var all = new List<T>();
        TableContinuationToken token = null;
        do
        {
            var seg = await table.ExecuteQuerySegmentedAsync(query, token);
            all.AddRange(seg.Results);
            token = seg.ContinuationToken;
        } while (token != null);
        return all;
    }

    static LegacyTyped NewTyped(string pk, string rk, double d) => Sample.Fill(new LegacyTyped(pk, rk), d);

    [Theory]
    [InlineData(TablePayloadFormat.Json)]
    [InlineData(TablePayloadFormat.JsonFullMetadata)]
    [InlineData(TablePayloadFormat.JsonNoMetadata)]
    public async Task EveryTypeRoundTripsInEachPayloadFormat(TablePayloadFormat format)
    {
        var client = CloudStorageAccount.Parse(_server.ConnectionString).CreateCloudTableClient();
        client.DefaultRequestOptions.PayloadFormat = format;
        var table = await NewTable("lfmt", client);
        var batch = new TableBatchOperation();
        for (int i = 0; i < Sample.Doubles.Length; i++)
            batch.Insert(NewTyped("p", $"r{i}", Sample.Doubles[i]), echoContent: i % 2 == 0);
        var inserted = await table.ExecuteBatchAsync(batch);
        Assert.Equal(Enumerable.Range(0, Sample.Doubles.Length).Select(i => i % 2 == 0 ? 201 : 204), inserted.Select(r => r.HttpStatusCode));
        for (int i = 0; i < Sample.Doubles.Length; i++)
            Sample.AssertRoundTrip(Sample.Doubles[i], (LegacyTyped)(await table.ExecuteAsync(TableOperation.Retrieve<LegacyTyped>("p", $"r{i}"))).Result);
        var queried = await All(new TableQuery<LegacyTyped>(), table);
        Assert.Equal(Sample.Doubles.Length, queried.Count);
        foreach (var e in queried)
            Sample.AssertRoundTrip(Sample.Doubles[int.Parse(e.RowKey[1..])], e);

        var dynamic = (DynamicTableEntity)(await table.ExecuteAsync(TableOperation.Retrieve("p", "r4"))).Result;
        if (format != TablePayloadFormat.JsonNoMetadata)
        {
            Assert.Equal(EdmType.Double, dynamic.Properties["Double"].PropertyType);
            Assert.True(double.IsNaN(dynamic.Properties["Double"].DoubleValue!.Value));
            Assert.Equal(EdmType.DateTime, dynamic.Properties["WhenUtc"].PropertyType);
            Assert.Equal(Sample.WhenUtc, dynamic.Properties["WhenUtc"].DateTime);
        }
    }

    [Fact]
    public async Task LinqAndStringFilters()
    {
        var table = await NewTable("llinq");
        var batch = new TableBatchOperation();
        for (int i = 0; i < 30; i++)
            batch.Insert(new DynamicTableEntity("orders", i.ToString("D10")) { Properties = { ["N"] = new EntityProperty(i) } });
        await table.ExecuteBatchAsync(batch);
        for (int i = 0; i < Sample.Doubles.Length; i++)
            await table.ExecuteAsync(TableOperation.Insert(NewTyped("types", $"r{i}", Sample.Doubles[i])));

        var lo = 10.ToString("D10");
        var hi = 20.ToString("D10");
        var rangeFilter = TableQuery.CombineFilters(
            TableQuery.CombineFilters(
                TableQuery.GenerateFilterCondition("PartitionKey", QueryComparisons.Equal, "orders"), TableOperators.And,
                TableQuery.GenerateFilterCondition("RowKey", QueryComparisons.GreaterThanOrEqual, lo)),
            TableOperators.And, TableQuery.GenerateFilterCondition("RowKey", QueryComparisons.LessThan, hi));
        var range = await All(new TableQuery<DynamicTableEntity>().Where(rangeFilter), table);
        Assert.Equal(Enumerable.Range(10, 10), range.Select(e => e.Properties["N"].Int32Value!.Value));

        var first = await table.ExecuteQuerySegmentedAsync(new TableQuery<DynamicTableEntity>().Where(
            TableQuery.GenerateFilterCondition("PartitionKey", QueryComparisons.Equal, "orders")).Take(4), null);
        Assert.Equal(Enumerable.Range(0, 4).Select(i => i.ToString("D10")), first.Results.Select(e => e.RowKey));
        Assert.NotNull(first.ContinuationToken);

        string[] all = Enumerable.Range(0, Sample.Doubles.Length).Select(i => $"r{i}").ToArray();
        string Cond(string f) => TableQuery.CombineFilters(
            TableQuery.GenerateFilterCondition("PartitionKey", QueryComparisons.Equal, "types"), TableOperators.And, f);
        async Task<string[]> Keys(string f) => (await All(new TableQuery<LegacyTyped>().Where(Cond(f)), table)).Select(e => e.RowKey).ToArray();
        Assert.Equal(all, await Keys(TableQuery.GenerateFilterConditionForDate("When", QueryComparisons.GreaterThanOrEqual, Sample.When)));
        Assert.Equal(all, await Keys(TableQuery.GenerateFilterConditionForGuid("Id", QueryComparisons.Equal, Sample.Id)));
        Assert.Equal(all, await Keys(TableQuery.GenerateFilterConditionForBinary("Bytes", QueryComparisons.Equal, Sample.Bytes)));
        Assert.Equal(all, await Keys(TableQuery.GenerateFilterConditionForLong("Int64", QueryComparisons.GreaterThan, 0)));
        Assert.Equal(new[] { "r5" }, await Keys(TableQuery.GenerateFilterConditionForDouble("Double", QueryComparisons.GreaterThan, double.MaxValue)));
        Assert.Equal(all, await Keys(TableQuery.GenerateFilterConditionForBool("Bool", QueryComparisons.NotEqual, false)));
    }

    [Fact]
    public async Task BatchesConcurrencyAndUpserts()
    {
        var table = await NewTable("lbatch");
        var master = new DynamicTableEntity("o1", "master") { Properties = { ["Items"] = new EntityProperty(1), ["Note"] = new EntityProperty("n") } };
        var ok = await table.ExecuteBatchAsync(new TableBatchOperation
        {
            TableOperation.Insert(master),
            TableOperation.Insert(new DynamicTableEntity("o1", "item1")),
        });
        Assert.Equal(2, ok.Count);

        var failing = new TableBatchOperation
        {
            TableOperation.Insert(new DynamicTableEntity("o1", "item2")),
            TableOperation.Delete(new DynamicTableEntity("o1", "nothere") { ETag = "*" }),
        };
        var ex = await Assert.ThrowsAsync<StorageException>(() => table.ExecuteBatchAsync(failing));
        Assert.Equal(404, ex.RequestInformation.HttpStatusCode);
        Assert.Equal("ResourceNotFound", ex.RequestInformation.ExtendedErrorInformation.ErrorCode);
        Assert.Equal(new[] { "item1", "master" }, (await All(new TableQuery<DynamicTableEntity>(), table)).Select(e => e.RowKey));

        // Stale ETag → 412; upsert merge and replace.
        var current = (DynamicTableEntity)(await table.ExecuteAsync(TableOperation.Retrieve("o1", "master"))).Result;
        string staleEtag = current.ETag;
        await table.ExecuteAsync(TableOperation.Merge(current));  // the client updates current.ETag
        Assert.NotEqual(staleEtag, current.ETag);
        var stale = await Assert.ThrowsAsync<StorageException>(() => table.ExecuteAsync(TableOperation.Merge(
            new DynamicTableEntity("o1", "master") { ETag = staleEtag })));
        Assert.Equal(412, stale.RequestInformation.HttpStatusCode);
        await table.ExecuteAsync(TableOperation.InsertOrMerge(new DynamicTableEntity("o1", "master") { Properties = { ["Extra"] = new EntityProperty(true) } }));
        var merged = (DynamicTableEntity)(await table.ExecuteAsync(TableOperation.Retrieve("o1", "master"))).Result;
        Assert.Equal(new[] { "Extra", "Items", "Note" }, merged.Properties.Keys.OrderBy(k => k));
        await table.ExecuteAsync(TableOperation.InsertOrReplace(new DynamicTableEntity("o1", "master") { Properties = { ["Only"] = new EntityProperty(1.5) } }));
        var replaced = (DynamicTableEntity)(await table.ExecuteAsync(TableOperation.Retrieve("o1", "master", new List<string> { "Only", "Items" }))).Result;
        Assert.Equal(1.5, replaced.Properties["Only"].DoubleValue);
        Assert.False(replaced.Properties.ContainsKey("Items") && replaced.Properties["Items"].PropertyAsObject != null);

        // $select through a query with SelectColumns.
        var projected = await All(new TableQuery<DynamicTableEntity> { SelectColumns = new List<string> { "Only" } }, table);
        Assert.All(projected, e => Assert.DoesNotContain("Note", e.Properties.Keys));
    }

    [Fact]
    public async Task PermissionsSasAndServiceProperties()
    {
        var table = await NewTable("lacl");
        for (int i = 0; i < 3; i++)
            await table.ExecuteAsync(TableOperation.Insert(new DynamicTableEntity($"p{i}", "r")));
        var perms = new TablePermissions();
        perms.SharedAccessPolicies.Add("all", new SharedAccessTablePolicy
        {
            Permissions = SharedAccessTablePermissions.Query | SharedAccessTablePermissions.Update | SharedAccessTablePermissions.Delete,
            SharedAccessStartTime = DateTimeOffset.UtcNow.AddMinutes(-5),
            SharedAccessExpiryTime = DateTimeOffset.UtcNow.AddHours(1),
        });
        await table.SetPermissionsAsync(perms);
        var read = await table.GetPermissionsAsync();
        Assert.Equal(perms.SharedAccessPolicies["all"].Permissions, read.SharedAccessPolicies["all"].Permissions);

        string sas = table.GetSharedAccessSignature(null, "all", "p1", null, "p1", null);
        var modern = new Azure.Data.Tables.TableClient(new Uri($"{_server.Endpoint}/{table.Name}{sas}"));
        Assert.Equal(new[] { "p1" }, modern.Query<Azure.Data.Tables.TableEntity>().Select(e => e.PartitionKey));
        modern.UpdateEntity(new Azure.Data.Tables.TableEntity("p1", "r") { ["X"] = 1 }, Azure.ETag.All);
        // An upsert needs add and update: the policy has no add.
        Assert.Equal(403, Assert.Throws<Azure.RequestFailedException>(() =>
            modern.UpsertEntity(new Azure.Data.Tables.TableEntity("p1", "r") { ["X"] = 2 })).Status);
        Assert.Equal(403, Assert.Throws<Azure.RequestFailedException>(() => modern.DeleteEntity("p2", "r")).Status);

        var props = await _client.GetServicePropertiesAsync();
        props.Logging.LoggingOperations = LoggingOperations.All;
        props.Logging.RetentionDays = 2;
        await _client.SetServicePropertiesAsync(props);
        var again = await _client.GetServicePropertiesAsync();
        Assert.Equal(LoggingOperations.All, again.Logging.LoggingOperations);
        Assert.Equal(2, again.Logging.RetentionDays);

        var dev = CloudStorageAccount.DevelopmentStorageAccount;
        Assert.Equal(new Uri("http://127.0.0.1:10002/devstoreaccount1"), dev.TableEndpoint);
        Assert.Equal(dev.TableEndpoint, CloudStorageAccount.Parse("UseDevelopmentStorage=true").TableEndpoint);
        Assert.Equal(new[] { "Json", "JsonFullMetadata", "JsonNoMetadata" }, Enum.GetNames<TablePayloadFormat>().OrderBy(n => n));
    }
}
