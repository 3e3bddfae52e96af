// Microsoft.Azure.Cosmos.Table (1.0.x): LINQ through CloudTable.CreateQuery<T>(), TableQuery<T> with
// GenerateFilterCondition…/CombineFilters, TableBatchOperation, segmented queries, payload formats.
using Microsoft.Azure.Cosmos.Table;
using Microsoft.Azure.Cosmos.Table.Queryable;
using Xunit;

namespace Cerulean.E2E;

[Collection("server")]
public sealed class CosmosTableTests
{
    readonly ServerFixture _server;
    readonly CloudTableClient _client;

    public CosmosTableTests(ServerFixture server)
    {
        _server = server;
        _client = CloudStorageAccount.Parse(server.ConnectionString).CreateCloudTableClient();
    }

    CloudTable NewTable(string prefix, CloudTableClient client = null)
    {
        var table = (client ?? _client).GetTableReference(ServerFixture.UniqueTable(prefix));
        Assert.True(table.CreateIfNotExists());
        return table;
    }

    [Fact]
    public void LinqPatterns()
    {
        var table = NewTable("clinq");
        var batch = new TableBatchOperation();
        var start = new DateTime(2026, 1, 1, 0, 0, 0, DateTimeKind.Utc);
        for (int i = 0; i < 12; i++)
        {
            var posted = start.AddMinutes(i);
            batch.Insert(new DynamicTableEntity("Marcus", string.Format("{0:D19}", DateTime.MaxValue.Ticks - posted.Ticks))
            {
                Properties = { ["Title"] = new EntityProperty($"post {i}"), ["Posted"] = new EntityProperty(posted) },
            });
        }
        table.ExecuteBatch(batch);

        // from p in context.Posts where p.PartitionKey == "Marcus" select p, newest 5.
        var latest = (from p in table.CreateQuery<DynamicTableEntity>()
                      where p.PartitionKey == "Marcus"
                      select p).Take(5).ToList();
        Assert.Equal(new[] { "post 11", "post 10", "post 9", "post 8", "post 7" }, latest.Select(p => p.Properties["Title"].StringValue));

        var words = NewTable("cwords");
        foreach (var w in new[] { "METABOLIC", "METABOLISE", "METABOLISM", "METABOLIST", "METABOLITE", "METAL" })
        {
            var e = NewTyped("M", w, 1.0);
            e.Text = w;
            words.Execute(TableOperation.Insert(e));
        }
        var starts = words.CreateQuery<CosmosTyped>()
            .Where(e => e.PartitionKey == "M" && e.RowKey.CompareTo("METABOLIS") >= 0 && e.RowKey.CompareTo("METABOLIT") < 0)
            .ToList();
        Assert.Equal(new[] { "METABOLISE", "METABOLISM", "METABOLIST" }, starts.Select(e => e.Text));

        // A projection becomes $select; the client fills only the projected members.
        var texts = words.CreateQuery<CosmosTyped>().Where(e => e.PartitionKey == "M" && e.RowKey.CompareTo("METAL") >= 0)
            .Select(e => new { e.RowKey, e.Text }).ToList();
        Assert.Equal("METAL", Assert.Single(texts).Text);
        var resolved = words.ExecuteQuery(new TableQuery<DynamicTableEntity>().Select(new[] { "Int64" }).Where(
            TableQuery.GenerateFilterCondition("RowKey", QueryComparisons.Equal, "METAL"))).Single();
        Assert.Equal(new[] { "Int64" }, resolved.Properties.Keys);
        Assert.Equal(long.MaxValue, resolved.Properties["Int64"].Int64Value);

        // The same through AsTableQuery and segments.
        var segment = words.CreateQuery<CosmosTyped>().Where(e => e.PartitionKey == "M").Take(2).AsTableQuery()
            .ExecuteSegmented(null);
        Assert.Equal(new[] { "METABOLIC", "METABOLISE" }, segment.Results.Select(e => e.RowKey));
        Assert.NotNull(segment.ContinuationToken);
        var rest = words.CreateQuery<CosmosTyped>().Where(e => e.PartitionKey == "M").AsTableQuery()
            .ExecuteSegmented(segment.ContinuationToken);
        Assert.Equal(new[] { "METABOLISM", "METABOLIST", "METABOLITE", "METAL" }, rest.Results.Select(e => e.RowKey));
    }

    [Fact]
    public void TableQueryFilterConditionsOnEveryType()
    {
        // Without metadata the client types values by the class's members, so it reads the NaN and
        // ±Infinity entities too (with metadata it refuses the Edm.Double annotation on them).
        var noMetadata = CloudStorageAccount.Parse(_server.ConnectionString).CreateCloudTableClient();
        noMetadata.DefaultRequestOptions.PayloadFormat = TablePayloadFormat.JsonNoMetadata;
        var table = NewTable("cfilter", noMetadata);
        for (int i = 0; i < Sample.Doubles.Length; i++)
            if (Sample.ClientWritesExactly(Sample.Doubles[i]))
                table.Execute(TableOperation.Insert(NewTyped("types", $"r{i}", Sample.Doubles[i])));
            else
                Sample.InsertWithLegacyClient(_server.ConnectionString, table.Name, "types", $"r{i}", Sample.Doubles[i]);
        string[] all = Enumerable.Range(0, Sample.Doubles.Length).Select(i => $"r{i}").ToArray();

        string[] Keys(string filter) =>
            table.ExecuteQuery(new TableQuery<CosmosTyped>().Where(filter)).Select(e => e.RowKey).ToArray();
        string And(string a, string b) => TableQuery.CombineFilters(a, TableOperators.And, b);
        string pk = TableQuery.GenerateFilterCondition("PartitionKey", QueryComparisons.Equal, "types");

        Assert.Equal(all, Keys(And(pk, TableQuery.GenerateFilterConditionForDate("When", QueryComparisons.Equal, Sample.When))));
        Assert.Empty(Keys(TableQuery.GenerateFilterConditionForDate("When", QueryComparisons.GreaterThan, Sample.When)));
        Assert.Equal(all, Keys(TableQuery.GenerateFilterConditionForDate("WhenUtc", QueryComparisons.Equal, Sample.WhenUtc)));
        Assert.Equal(all, Keys(TableQuery.GenerateFilterConditionForGuid("Id", QueryComparisons.Equal, Sample.Id)));
        Assert.Equal(all, Keys(TableQuery.GenerateFilterConditionForBinary("Bytes", QueryComparisons.Equal, Sample.Bytes)));
        Assert.Equal(all, Keys(TableQuery.GenerateFilterConditionForLong("Int64", QueryComparisons.Equal, long.MaxValue)));
        Assert.Equal(all, Keys(TableQuery.GenerateFilterConditionForInt("Int32", QueryComparisons.Equal, int.MinValue)));
        Assert.Equal(all, Keys(TableQuery.GenerateFilterConditionForBool("Bool", QueryComparisons.Equal, true)));
        Assert.Equal(new[] { "r0" }, Keys(TableQuery.GenerateFilterConditionForDouble("Double", QueryComparisons.Equal, 0.1)));
        Assert.Equal(new[] { "r7" }, Keys(TableQuery.GenerateFilterConditionForDouble("Double", QueryComparisons.Equal, 2.0)));
        Assert.Equal(new[] { "r1", "r6" }, Keys(TableQuery.GenerateFilterConditionForDouble("Double", QueryComparisons.LessThan, -1e-301)));
        Assert.Equal(all, Keys(TableQuery.GenerateFilterCondition("Text", QueryComparisons.Equal, Sample.Text)));
        Assert.Equal(new[] { "r1", "r2" }, Keys(TableQuery.CombineFilters(
            TableQuery.GenerateFilterCondition("RowKey", QueryComparisons.GreaterThanOrEqual, "r1"),
            TableOperators.And,
            TableQuery.CombineFilters(TableQuery.GenerateFilterCondition("RowKey", QueryComparisons.LessThan, "r3"),
                TableOperators.Or, TableQuery.GenerateFilterCondition("RowKey", QueryComparisons.Equal, "zzz")))));
        Assert.Equal(new[] { "r2", "r3" }, Keys("not (RowKey lt 'r2') and not (RowKey gt 'r3')"));

        // LINQ on the typed class: the client writes datetime'…', guid'…', X'…' and L literals itself.
        var when = Sample.When;
        var id = Sample.Id;
        var bytes = Sample.Bytes;
        Assert.Equal(all, table.CreateQuery<CosmosTyped>().Where(e => e.When == when && e.Id == id && e.Int64 == long.MaxValue && e.Bool).ToList().Select(e => e.RowKey));
        Assert.Equal(all, table.CreateQuery<CosmosTyped>().Where(e => e.Bytes == bytes).ToList().Select(e => e.RowKey));
    }

    static CosmosTyped NewTyped(string pk, string rk, double d) => Sample.Fill(new CosmosTyped(pk, rk), d);

    [Theory]
    [InlineData(TablePayloadFormat.Json)]
    [InlineData(TablePayloadFormat.JsonFullMetadata)]
    [InlineData(TablePayloadFormat.JsonNoMetadata)]
    public void EveryTypeRoundTripsInEachPayloadFormat(TablePayloadFormat format)
    {
        var client = CloudStorageAccount.Parse(_server.ConnectionString).CreateCloudTableClient();
        client.DefaultRequestOptions.PayloadFormat = format;
        var table = NewTable("cfmt", client);
        // Cosmos.Table 1.0.8 neither writes NaN/±Infinity as Edm.Double nor reads them when the
        // payload annotates them (it throws "Unexpected EDM type ... Edm.Double", as it would
        // against Azure); without metadata it reads them by the class's member types.
        var doubles = Sample.Doubles.Select((d, i) => (d, i))
            .Where(x => format == TablePayloadFormat.JsonNoMetadata || double.IsFinite(x.d)).ToList();
        foreach (var (d, i) in doubles)
            if (Sample.ClientWritesExactly(d))
                table.Execute(TableOperation.Insert(NewTyped("p", $"r{i}", d)));
            else
                Sample.InsertWithLegacyClient(_server.ConnectionString, table.Name, "p", $"r{i}", d);
        foreach (var (d, i) in doubles)
            Sample.AssertRoundTrip(d, (CosmosTyped)table.Execute(TableOperation.Retrieve<CosmosTyped>("p", $"r{i}")).Result);
        var queried = table.ExecuteQuery(new TableQuery<CosmosTyped>()).ToList();
        Assert.Equal(doubles.Count, queried.Count);
        for (int i = 0; i < queried.Count; i++)
            Sample.AssertRoundTrip(Sample.Doubles[int.Parse(queried[i].RowKey[1..])], queried[i]);

        // DynamicTableEntity: types come from the payload (no metadata: the client resolves them itself).
        var dynamic = (DynamicTableEntity)table.Execute(TableOperation.Retrieve("p", "r0")).Result;
        if (format != TablePayloadFormat.JsonNoMetadata)
        {
            Assert.Equal(EdmType.Int64, dynamic.Properties["Int64"].PropertyType);
            Assert.Equal(EdmType.Guid, dynamic.Properties["Id"].PropertyType);
            Assert.Equal(EdmType.Binary, dynamic.Properties["Bytes"].PropertyType);
            Assert.Equal(EdmType.DateTime, dynamic.Properties["When"].PropertyType);
            Assert.Equal(Sample.When.UtcTicks, dynamic.Properties["When"].DateTimeOffsetValue!.Value.UtcTicks);
        }
        Assert.False(dynamic.Properties.ContainsKey("NullText"));

        Assert.Throws<ArgumentException>(() => new TableBatchOperation  // a retrieve must be alone in a batch
        {
            TableOperation.InsertOrMerge(new DynamicTableEntity("p", "r0") { Properties = { ["Extra"] = new EntityProperty(7L) } }),
            TableOperation.Retrieve<CosmosTyped>("p", "r1"),
        });
        var results = table.ExecuteBatch(new TableBatchOperation { TableOperation.Retrieve<CosmosTyped>("p", "r1") });
        Sample.AssertRoundTrip(Sample.Doubles[1], (CosmosTyped)Assert.Single(results).Result);
    }

    [Fact]
    public void BatchMasterItemAndFailingBatch()
    {
        var table = NewTable("cbatch");
        var batch = new TableBatchOperation
        {
            TableOperation.Insert(new DynamicTableEntity("o1", "master") { Properties = { ["Items"] = new EntityProperty(2) } }),
            TableOperation.Insert(new DynamicTableEntity("o1", "item1")),
            TableOperation.InsertOrReplace(new DynamicTableEntity("o1", "item2")),
        };
        var results = table.ExecuteBatch(batch);
        Assert.Equal(new[] { 204, 204, 204 }, results.Select(r => r.HttpStatusCode));  // Insert sends return-no-content
        Assert.All(results, r => Assert.False(string.IsNullOrEmpty(r.Etag)));

        var before = table.ExecuteQuery(new TableQuery<DynamicTableEntity>()).Select(e => (e.RowKey, e.ETag)).ToList();
        var master = (DynamicTableEntity)results[0].Result;
        master.Properties["Items"] = new EntityProperty(3);
        var failing = new TableBatchOperation
        {
            TableOperation.Merge(master),
            TableOperation.Insert(new DynamicTableEntity("o1", "item3")),
            TableOperation.Insert(new DynamicTableEntity("o1", "item1")),
        };
        var ex = Assert.Throws<StorageException>(() => table.ExecuteBatch(failing));
        Assert.Equal(409, ex.RequestInformation.HttpStatusCode);
        Assert.Equal("EntityAlreadyExists", ex.RequestInformation.ExtendedErrorInformation.ErrorCode);
        Assert.StartsWith("2:", ex.RequestInformation.ExtendedErrorInformation.ErrorMessage);
        Assert.Equal(before, table.ExecuteQuery(new TableQuery<DynamicTableEntity>()).Select(e => (e.RowKey, e.ETag)).ToList());

        // Mixed partitions are refused by the client; a stale ETag is a 412 StorageException.
        string staleEtag = master.ETag;
        table.Execute(TableOperation.Merge(master));  // the client updates master.ETag
        master.ETag = staleEtag;
        var stale = Assert.Throws<StorageException>(() => table.Execute(TableOperation.Replace(master)));
        Assert.Equal(412, stale.RequestInformation.HttpStatusCode);
        Assert.Equal("UpdateConditionNotSatisfied", stale.RequestInformation.ExtendedErrorInformation.ErrorCode);
        var staleBatch = Assert.Throws<StorageException>(() => table.ExecuteBatch(new TableBatchOperation { TableOperation.Delete(master) }));
        Assert.Equal(412, staleBatch.RequestInformation.HttpStatusCode);
    }

    [Fact]
    public void SegmentedQueriesAndTableListing()
    {
        string prefix = ServerFixture.UniqueTable("cday");
        var tables = Enumerable.Range(0, 3).Select(d => _client.GetTableReference($"{prefix}2026112{d}")).ToList();
        foreach (var t in tables)
        {
            t.Create();
            var batch = new TableBatchOperation();
            for (int i = 0; i < 7; i++)
                batch.Insert(new DynamicTableEntity("h09", i.ToString("D4")));
            t.ExecuteBatch(batch);
        }
        var names = _client.ListTables(prefix).Select(t => t.Name).ToList();
        Assert.Equal(tables.Select(t => t.Name), names);
        var seg = _client.ListTablesSegmented(prefix, 2, null);
        Assert.Equal(2, seg.Results.Count);
        Assert.NotNull(seg.ContinuationToken);
        Assert.Equal(tables[2].Name, Assert.Single(_client.ListTablesSegmented(prefix, 2, seg.ContinuationToken).Results).Name);

        var query = new TableQuery<DynamicTableEntity>().Take(3);
        TableContinuationToken token = null;
        var seen = new List<string>();
        int segments = 0;
        do
        {
            var page = tables[0].ExecuteQuerySegmented(query, token);
            Assert.True(page.Results.Count <= 3);
            seen.AddRange(page.Results.Select(e => e.RowKey));
            token = page.ContinuationToken;
            segments++;
        } while (token != null);
        Assert.Equal(3, segments);
        Assert.Equal(Enumerable.Range(0, 7).Select(i => i.ToString("D4")), seen);

        Assert.True(tables[0].DeleteIfExists());
        Assert.False(tables[0].Exists());
        Assert.False(tables[0].DeleteIfExists());
        var ex = Assert.Throws<StorageException>(() => tables[0].Execute(TableOperation.Insert(new DynamicTableEntity("a", "b"))));
        Assert.Equal(404, ex.RequestInformation.HttpStatusCode);
        Assert.Equal("TableNotFound", ex.RequestInformation.ExtendedErrorInformation.ErrorCode);
    }

    [Fact]
    public void PermissionsAndSasUsedByTheNewClient()
    {
        var table = NewTable("cacl");
        for (int i = 0; i < 4; i++)
            table.Execute(TableOperation.Insert(new DynamicTableEntity("p", $"r{i}")));
        var perms = new TablePermissions();
        perms.SharedAccessPolicies.Add("q", new SharedAccessTablePolicy
        {
            Permissions = SharedAccessTablePermissions.Query | SharedAccessTablePermissions.Add,
            SharedAccessExpiryTime = DateTimeOffset.UtcNow.AddHours(1),
        });
        table.SetPermissions(perms);
        var read = table.GetPermissions();
        Assert.Equal(SharedAccessTablePermissions.Query | SharedAccessTablePermissions.Add, read.SharedAccessPolicies["q"].Permissions);

        string sas = table.GetSharedAccessSignature(new SharedAccessTablePolicy(), "q", "p", "r1", "p", "r2");
        var modern = new Azure.Data.Tables.TableClient(new Uri($"{_server.Endpoint}/{table.Name}"), new Azure.AzureSasCredential(sas));
        Assert.Equal(new[] { "r1", "r2" }, modern.Query<Azure.Data.Tables.TableEntity>().Select(e => e.RowKey));
        modern.AddEntity(new Azure.Data.Tables.TableEntity("p", "r15"));
        var outside = Assert.Throws<Azure.RequestFailedException>(() => modern.AddEntity(new Azure.Data.Tables.TableEntity("p", "r3")));
        Assert.Equal(403, outside.Status);
        var noDelete = Assert.Throws<Azure.RequestFailedException>(() => modern.DeleteEntity("p", "r1"));
        Assert.Equal(403, noDelete.Status);

        // An account SAS from this client, used by the new client to list tables and read entities.
        var account = CloudStorageAccount.Parse(_server.ConnectionString);
        string accountSas = account.GetSharedAccessSignature(new SharedAccessAccountPolicy
        {
            Permissions = SharedAccessAccountPermissions.List | SharedAccessAccountPermissions.Read,
            Services = SharedAccessAccountServices.Table,
            ResourceTypes = SharedAccessAccountResourceTypes.Service | SharedAccessAccountResourceTypes.Container | SharedAccessAccountResourceTypes.Object,
            SharedAccessExpiryTime = DateTimeOffset.UtcNow.AddHours(1),
            Protocols = SharedAccessProtocol.HttpsOrHttp,
        });
        var accountClient = new Azure.Data.Tables.TableServiceClient(new Uri(_server.Endpoint), new Azure.AzureSasCredential(accountSas));
        Assert.Contains(table.Name, accountClient.Query().Select(t => t.Name));
        Assert.Equal(5, accountClient.GetTableClient(table.Name).Query<Azure.Data.Tables.TableEntity>().Count());
        var readOnly = Assert.Throws<Azure.RequestFailedException>(() =>
            accountClient.GetTableClient(table.Name).AddEntity(new Azure.Data.Tables.TableEntity("p", "new")));
        Assert.Equal(403, readOnly.Status);

        // A SAS the old client signs itself, without a stored policy.
        string adhoc = table.GetSharedAccessSignature(new SharedAccessTablePolicy
        {
            Permissions = SharedAccessTablePermissions.Query,
            SharedAccessExpiryTime = DateTimeOffset.UtcNow.AddMinutes(30),
        });
        var sasTable = new CloudTable(table.Uri, new StorageCredentials(adhoc));
        Assert.Equal(5, sasTable.ExecuteQuery(new TableQuery<DynamicTableEntity>()).Count());
    }

    [Fact]
    public void ServicePropertiesAndDevelopmentStorage()
    {
        var props = _client.GetServiceProperties();
        props.Cors.CorsRules.Clear();
        props.Cors.CorsRules.Add(new CorsRule
        {
            AllowedOrigins = { "https://a.example" },
            AllowedMethods = CorsHttpMethods.Get | CorsHttpMethods.Merge,
            AllowedHeaders = { "x-ms-meta-*" },
            ExposedHeaders = { "*" },
            MaxAgeInSeconds = 60,
        });
        props.MinuteMetrics.MetricsLevel = MetricsLevel.ServiceAndApi;
        props.MinuteMetrics.RetentionDays = 3;
        _client.SetServiceProperties(props);
        try
        {
            var again = _client.GetServiceProperties();
            var rule = Assert.Single(again.Cors.CorsRules);
            Assert.Equal(CorsHttpMethods.Get | CorsHttpMethods.Merge, rule.AllowedMethods);
            Assert.Equal(new[] { "https://a.example" }, rule.AllowedOrigins);
            Assert.Equal(MetricsLevel.ServiceAndApi, again.MinuteMetrics.MetricsLevel);
            Assert.Equal(3, again.MinuteMetrics.RetentionDays);
        }
        finally
        {
            props.Cors.CorsRules.Clear();
            _client.SetServiceProperties(props);
        }

        // No Atom: the client offers JSON payloads only.
        Assert.Equal(new[] { "Json", "JsonFullMetadata", "JsonNoMetadata" }, Enum.GetNames<TablePayloadFormat>().OrderBy(n => n));

        var dev = CloudStorageAccount.Parse("UseDevelopmentStorage=true");
        Assert.Equal(new Uri("http://127.0.0.1:10002/devstoreaccount1"), dev.TableEndpoint);
        Assert.Equal("devstoreaccount1", dev.Credentials.AccountName);
        Assert.True(dev.Credentials.IsSharedKey);
    }
}
