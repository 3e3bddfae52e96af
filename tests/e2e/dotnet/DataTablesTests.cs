// Azure.Data.Tables (12.x): the table-design patterns as users write them with LINQ, every EDM type,
// paging, concurrency, upserts, $select, transactions, service properties, ACLs and SAS.
using Azure;
using Azure.Data.Tables;
using Azure.Data.Tables.Models;
using Azure.Data.Tables.Sas;
using Xunit;

namespace Cerulean.E2E;

[Collection("server")]
public sealed class DataTablesTests
{
    readonly ServerFixture _server;
    readonly TableServiceClient _service;

    public DataTablesTests(ServerFixture server)
    {
        _server = server;
        _service = new TableServiceClient(server.ConnectionString);
    }

    TableClient NewTable(string prefix)
    {
        var table = _service.GetTableClient(ServerFixture.UniqueTable(prefix));
        table.Create();
        return table;
    }

    [Fact]
    public async Task ReverseChronologicalTicksKeysWithTake()
    {
        var table = NewTable("posts");
        var start = new DateTimeOffset(2026, 1, 1, 0, 0, 0, TimeSpan.Zero);
        for (int i = 0; i < 12; i++)
        {
            var posted = start.AddMinutes(i).AddTicks(i);
            await table.AddEntityAsync(new Post
            {
                PartitionKey = "Marcus",
                RowKey = string.Format("{0:D19}", DateTime.MaxValue.Ticks - posted.UtcTicks),
                Title = $"post {i}", Posted = posted,
            });
        }
        await table.AddEntityAsync(new Post { PartitionKey = "Other", RowKey = "0", Title = "x", Posted = start });

        var latest = table.Query<Post>(p => p.PartitionKey == "Marcus", maxPerPage: 5).Take(5).ToList();
        Assert.Equal(new[] { "post 11", "post 10", "post 9", "post 8", "post 7" }, latest.Select(p => p.Title));
        Assert.Equal(start.AddMinutes(11).AddTicks(11), latest[0].Posted);

        // The newest post after a known one: the next key up.
        string after = latest[2].RowKey;
        var next = new List<Post>();
        await foreach (var p in table.QueryAsync<Post>(p => p.PartitionKey == "Marcus" && p.RowKey.CompareTo(after) > 0, maxPerPage: 1))
        {
            next.Add(p);
            break;
        }
        Assert.Equal("post 8", Assert.Single(next).Title);
    }

    [Fact]
    public void NumericZeroPaddedKeysAndStartsWithRanges()
    {
        var table = NewTable("numeric");
        var actions = new List<TableTransactionAction>();
        for (int i = 0; i < 30; i++)
            actions.Add(new TableTransactionAction(TableTransactionActionType.Add,
                new TableEntity("orders", i.ToString("D10")) { ["N"] = i }));
        table.SubmitTransaction(actions);

        var range = table.Query<TableEntity>(e => e.PartitionKey == "orders"
            && e.RowKey.CompareTo(10.ToString("D10")) >= 0 && e.RowKey.CompareTo(20.ToString("D10")) < 0).ToList();
        Assert.Equal(Enumerable.Range(10, 10), range.Select(e => e.GetInt32("N")!.Value));

        // Starts-with as the design guide writes it: "METABOLIS" <= RowKey < "METABOLIT".
        var words = NewTable("words");
        foreach (var w in new[] { "METABOLIC", "METABOLISE", "METABOLISM", "METABOLIST", "METABOLITE", "METAL" })
            words.AddEntity(new TableEntity("M", w));
        var starts = words.Query<TableEntity>(e => e.PartitionKey == "M"
            && e.RowKey.CompareTo("METABOLIS") >= 0 && e.RowKey.CompareTo("METABOLIT") < 0).Select(e => e.RowKey);
        Assert.Equal(new[] { "METABOLISE", "METABOLISM", "METABOLIST" }, starts);
    }

    [Fact]
    public void ParentChildCompositionWithNextCharacter()
    {
        var table = NewTable("compose");
        foreach (var parent in new[] { "p1", "p10", "p2" })
            for (int c = 0; c < 3; c++)
                table.AddEntity(new TableEntity("dept", $"{parent}_{c:D3}") { ["Parent"] = parent });
        table.AddEntity(new TableEntity("dept", "p1") { ["Parent"] = "" });

        // All children of p1: RowKey >= "p1_" and < "p1`" ('`' is the character after '_').
        string prefix = "p1_";
        string end = prefix[..^1] + (char)(prefix[^1] + 1);
        var children = table.Query<TableEntity>(e => e.PartitionKey == "dept"
            && e.RowKey.CompareTo(prefix) >= 0 && e.RowKey.CompareTo(end) < 0).Select(e => e.RowKey).ToList();
        Assert.Equal(new[] { "p1_000", "p1_001", "p1_002" }, children);

        var filter = TableClient.CreateQueryFilter($"PartitionKey eq {"dept"} and RowKey ge {prefix} and RowKey lt {end}");
        Assert.Equal(children, table.Query<TableEntity>(filter).Select(e => e.RowKey));
    }

    [Fact]
    public async Task TablePerDayWithDeleteTable()
    {
        string prefix = ServerFixture.UniqueTable("logs");
        var days = Enumerable.Range(0, 3).Select(d => new DateTime(2026, 11, 24).AddDays(d)).ToList();
        foreach (var day in days)
        {
            var t = _service.GetTableClient(prefix + day.ToString("yyyyMMdd"));
            await t.CreateIfNotExistsAsync();
            await t.AddEntityAsync(new TableEntity(day.ToString("HH"), Guid.NewGuid().ToString()) { ["Msg"] = day.ToString("o") });
        }
        var listed = _service.Query(t => t.Name.CompareTo(prefix) >= 0 && t.Name.CompareTo(prefix + "{") < 0)
            .Select(t => t.Name).ToList();
        Assert.Equal(days.Select(d => prefix + d.ToString("yyyyMMdd")), listed);

        // Retire the oldest day in one call.
        await _service.DeleteTableAsync(listed[0]);
        var gone = _service.GetTableClient(listed[0]);
        var ex = Assert.Throws<RequestFailedException>(() => gone.Query<TableEntity>().ToList());
        Assert.Equal(404, ex.Status);
        Assert.Equal("TableNotFound", ex.ErrorCode);
        Assert.Equal(listed.Skip(1), _service.Query($"TableName ge '{prefix}' and TableName lt '{prefix}{{'").Select(t => t.Name));
        // Deleting it again is a 404 the client reports, not an error.
        var again = await gone.DeleteAsync();
        Assert.Equal(404, again.Status);
    }

    [Fact]
    public void HashPartitioning()
    {
        var table = NewTable("hashed");
        const int buckets = 8;
        static string Bucket(string id) =>
            ((uint)id.Aggregate(17, (h, c) => unchecked(h * 31 + c)) % buckets).ToString("D2");
        var ids = Enumerable.Range(0, 40).Select(i => $"user{i}").ToList();
        foreach (var group in ids.GroupBy(Bucket))
            table.SubmitTransaction(group.Select(id =>
                new TableTransactionAction(TableTransactionActionType.UpsertReplace, new TableEntity(group.Key, id) { ["Id"] = id })));

        foreach (var id in ids)
            Assert.Equal(id, table.GetEntity<TableEntity>(Bucket(id), id).Value.GetString("Id"));
        var lowBuckets = table.Query<TableEntity>(e => e.PartitionKey.CompareTo("00") >= 0 && e.PartitionKey.CompareTo("04") < 0).ToList();
        Assert.Equal(ids.Count(id => string.CompareOrdinal(Bucket(id), "04") < 0), lowBuckets.Count);
        Assert.Equal(ids.Count, table.Query<TableEntity>(select: new[] { "PartitionKey" }).Count());
    }

    [Fact]
    public async Task MasterItemTransactionAndFailingBatchLeavesPartitionUnchanged()
    {
        var table = NewTable("orders");
        var master = new TableEntity("order42", "master") { ["Items"] = 2, ["Total"] = 30.5 };
        await table.SubmitTransactionAsync(new[]
        {
            new TableTransactionAction(TableTransactionActionType.Add, master),
            new TableTransactionAction(TableTransactionActionType.Add, new TableEntity("order42", "item001") { ["Price"] = 10.25 }),
            new TableTransactionAction(TableTransactionActionType.Add, new TableEntity("order42", "item002") { ["Price"] = 20.25 }),
        });

        var stored = (await table.GetEntityAsync<TableEntity>("order42", "master")).Value;
        var before = table.Query<TableEntity>(e => e.PartitionKey == "order42").Select(e => (e.RowKey, e.ETag)).ToList();
        Assert.Equal(3, before.Count);

        // Add a third item and bump the master under its ETag; the item exists already, so all fails.
        stored["Items"] = 3;
        var failing = new[]
        {
            new TableTransactionAction(TableTransactionActionType.UpdateMerge, stored, stored.ETag),
            new TableTransactionAction(TableTransactionActionType.Add, new TableEntity("order42", "item003") { ["Price"] = 1.0 }),
            new TableTransactionAction(TableTransactionActionType.Add, new TableEntity("order42", "item001") { ["Price"] = 99.0 }),
        };
        var ex = await Assert.ThrowsAsync<TableTransactionFailedException>(() => table.SubmitTransactionAsync(failing));
        Assert.Equal(409, ex.Status);
        Assert.Equal("EntityAlreadyExists", ex.ErrorCode);
        Assert.Equal(2, ex.FailedTransactionActionIndex);
        Assert.Equal(before, table.Query<TableEntity>(e => e.PartitionKey == "order42").Select(e => (e.RowKey, e.ETag)).ToList());

        // A stale ETag inside a batch fails the batch with 412.
        var ok = await table.SubmitTransactionAsync(new[] { failing[0], failing[1] });
        Assert.Equal(2, ok.Value.Count);
        var stale = await Assert.ThrowsAsync<TableTransactionFailedException>(() => table.SubmitTransactionAsync(new[]
        {
            new TableTransactionAction(TableTransactionActionType.Delete, new TableEntity("order42", "item002")),
            new TableTransactionAction(TableTransactionActionType.UpdateReplace, stored, stored.ETag),
        }));
        Assert.Equal(412, stale.Status);
        Assert.Equal(1, stale.FailedTransactionActionIndex);
        Assert.Equal(4, table.Query<TableEntity>(e => e.PartitionKey == "order42").Count());
        Assert.Equal(3, table.GetEntity<TableEntity>("order42", "master").Value.GetInt32("Items"));
    }

    [Fact]
    public void EveryEdmTypeRoundTripsAndFilters()
    {
        var table = NewTable("types");
        for (int i = 0; i < Sample.Doubles.Length; i++)
            if (Sample.ClientWritesExactly(Sample.Doubles[i]))
                table.AddEntity(Sample.Typed("types", $"r{i}", Sample.Doubles[i]));
            else
                Sample.InsertWithLegacyClient(_server.ConnectionString, table.Name, "types", $"r{i}", Sample.Doubles[i]);

        for (int i = 0; i < Sample.Doubles.Length; i++)
        {
            var e = table.GetEntity<TypedEntity>("types", $"r{i}").Value;
            Sample.AssertRoundTrip(Sample.Doubles[i], e);
            Assert.Equal(Sample.When, e.When);
            Assert.Equal(Sample.WhenUtc, e.WhenUtc);
        }
        var dynamic = table.GetEntity<TableEntity>("types", "r0").Value;
        Assert.False(dynamic.ContainsKey("NullText"));  // nulls are not stored
        Assert.IsType<long>(dynamic["Int64"]);
        Assert.IsType<Guid>(dynamic["Id"]);
        Assert.IsType<byte[]>(dynamic["Bytes"]);
        Assert.IsType<DateTimeOffset>(dynamic["When"]);

        string[] Keys(System.Linq.Expressions.Expression<Func<TypedEntity, bool>> f) =>
            table.Query(f).Select(e => e.RowKey).ToArray();
        string[] all = Enumerable.Range(0, Sample.Doubles.Length).Select(i => $"r{i}").ToArray();
        var when = Sample.When;
        var whenUtc = Sample.WhenUtc;
        var id = Sample.Id;
        var bytes = Sample.Bytes;
        Assert.Equal(all, Keys(e => e.When == when));
        Assert.Empty(Keys(e => e.When > when));
        Assert.Equal(all, Keys(e => e.When < when.AddTicks(1) && e.When > when.AddTicks(-1)));
        Assert.Equal(all, Keys(e => e.WhenUtc == whenUtc));
        Assert.Equal(all, Keys(e => e.Id == id));
        Assert.Empty(Keys(e => e.Id != id));
        Assert.Equal(all, Keys(e => e.Bytes == bytes));
        Assert.Equal(all, Keys(e => e.Int64 == long.MaxValue));
        Assert.Equal(all, Keys(e => e.Int32 == int.MinValue));
        Assert.Equal(all, Keys(e => e.Bool == true));
        Assert.Equal(all, Keys(e => e.Bool));
        Assert.Empty(Keys(e => !e.Bool));
        Assert.Equal(new[] { "r0" }, Keys(e => e.Double == 0.1));
        Assert.Equal(new[] { "r7" }, Keys(e => e.Double == 2.0));
        Assert.Equal(new[] { "r2", "r5", "r7" }, Keys(e => e.Double >= 2.0));
        Assert.Equal(new[] { "r1", "r6" }, Keys(e => e.Double < -1e-301));
        Assert.Equal(new[] { "r0", "r2", "r3", "r5", "r7" }, Keys(e => e.Double > 0.0));
        Assert.Equal(all, Keys(e => e.Text == Sample.Text));
        // Filters written as strings, with the client's own literal spellings.
        Assert.Equal(all, table.Query<TableEntity>(TableClient.CreateQueryFilter(
            $"When eq {when} and Id eq {id} and Bytes eq {bytes} and Int64 eq {long.MaxValue} and Bool eq {true}")).Select(e => e.RowKey));
    }

    [Fact]
    public async Task LinqOperatorsAsTheClientWritesThem()
    {
        var table = NewTable("ops");
        await table.SubmitTransactionAsync(Enumerable.Range(0, 10).Select(i => new TableTransactionAction(
            TableTransactionActionType.Add,
            new TableEntity("p", i.ToString("D2")) { ["N"] = i, ["L"] = (long)i << 40, ["D"] = i / 4.0, ["B"] = i % 2 == 0, ["S"] = $"s{i}" })));
        string[] Keys(System.Linq.Expressions.Expression<Func<TableEntity, bool>> f) =>
            table.Query(f).Select(e => e.RowKey).ToArray();
        static string[] K(params int[] n) => n.Select(i => i.ToString("D2")).ToArray();
        int five = 5;
        long big = 3L << 40;
        Assert.Equal(K(6, 7, 8, 9), Keys(e => e.GetInt32("N") > five));
        Assert.Equal(K(0, 1, 2, 3, 4, 5), Keys(e => !(e.GetInt32("N") > 5)));
        Assert.Equal(K(0, 9), Keys(e => e.GetInt32("N") == 0 || e.RowKey == "09"));
        Assert.Equal(K(3, 4, 5, 6, 7, 8, 9), Keys(e => e.GetInt64("L") >= big));
        Assert.Equal(K(0, 1, 3, 4, 5, 6, 7, 8, 9), Keys(e => e.GetDouble("D") != 0.5));
        Assert.Equal(K(2, 4), Keys(e => e.GetBoolean("B") == true && e.GetInt32("N") >= 1 && e.GetInt32("N") <= 4));
        Assert.Equal(K(1, 3), Keys(e => e.GetBoolean("B") == false && e.GetInt32("N") < 5));
        Assert.Equal(K(7), Keys(e => e.GetString("S") == "s7"));
        Assert.Equal(K(8, 9), Keys(e => e.GetString("S").CompareTo("s8") >= 0 && (e.PartitionKey == "p" || e.PartitionKey == "q")));
        // Missing properties compare false, also with ne.
        Assert.Empty(Keys(e => e.GetInt32("Missing") != 1));
        Assert.Equal(K(Enumerable.Range(0, 10).ToArray()), Keys(e => !(e.GetInt32("Missing") == 1)));
    }

    [Fact]
    public async Task PagingWithContinuation()
    {
        var table = NewTable("paging");
        foreach (var pk in new[] { "a", "b", "c" })
            table.SubmitTransaction(Enumerable.Range(0, 9).Select(i =>
                new TableTransactionAction(TableTransactionActionType.Add, new TableEntity(pk, i.ToString("D3")))));

        // Timestamp filters, as change feeds poll: everything written since a moment before.
        var since = DateTimeOffset.UtcNow.AddMinutes(-5);
        Assert.Equal(27, table.Query<TableEntity>(e => e.Timestamp >= since).Count());
        var future = DateTimeOffset.UtcNow.AddMinutes(5);
        Assert.Empty(table.Query<TableEntity>(e => e.Timestamp > future));

        var pages = table.Query<TableEntity>(e => e.RowKey.CompareTo("002") >= 0, maxPerPage: 4).AsPages().ToList();
        Assert.Equal(21, pages.Sum(p => p.Values.Count));
        Assert.All(pages, p => Assert.True(p.Values.Count <= 4));
        Assert.Null(pages[^1].ContinuationToken);
        Assert.All(pages.Take(pages.Count - 1), p => Assert.NotNull(p.ContinuationToken));

        // Resume from a saved token, as a web page's "next" link does.
        string token = pages[1].ContinuationToken;
        var resumed = new List<string>();
        await foreach (var page in table.QueryAsync<TableEntity>(e => e.RowKey.CompareTo("002") >= 0, maxPerPage: 4).AsPages(token))
            resumed.AddRange(page.Values.Select(e => e.PartitionKey + e.RowKey));
        var expected = pages.Skip(2).SelectMany(p => p.Values).Select(e => e.PartitionKey + e.RowKey);
        Assert.Equal(expected, resumed);
    }

    [Fact]
    public async Task EtagConcurrencyAndUpsertModes()
    {
        var table = NewTable("etag");
        var added = await table.AddEntityAsync(new TableEntity("p", "r") { ["A"] = "a", ["B"] = 1 });
        var first = table.GetEntity<TableEntity>("p", "r").Value;
        Assert.Equal(added.Headers.ETag, first.ETag);

        first["B"] = 2;
        await table.UpdateEntityAsync(first, first.ETag, TableUpdateMode.Merge);
        var stale = await Assert.ThrowsAsync<RequestFailedException>(() => table.UpdateEntityAsync(first, first.ETag, TableUpdateMode.Replace));
        Assert.Equal(412, stale.Status);
        Assert.Equal("UpdateConditionNotSatisfied", stale.ErrorCode);
        var staleDelete = Assert.Throws<RequestFailedException>(() => table.DeleteEntity("p", "r", first.ETag));
        Assert.Equal(412, staleDelete.Status);
        var dup = Assert.Throws<RequestFailedException>(() => table.AddEntity(new TableEntity("p", "r")));
        Assert.Equal(409, dup.Status);
        Assert.Equal("EntityAlreadyExists", dup.ErrorCode);
        var missing = Assert.Throws<RequestFailedException>(() => table.UpdateEntity(new TableEntity("p", "none"), ETag.All));
        Assert.Equal(404, missing.Status);
        Assert.Equal("ResourceNotFound", missing.ErrorCode);

        // Upsert merge keeps what is not sent; upsert replace drops it.
        await table.UpsertEntityAsync(new TableEntity("p", "r") { ["C"] = true }, TableUpdateMode.Merge);
        var merged = table.GetEntity<TableEntity>("p", "r").Value;
        Assert.Equal(("a", 2, true), (merged.GetString("A"), merged.GetInt32("B"), merged.GetBoolean("C")));
        await table.UpsertEntityAsync(new TableEntity("p", "r") { ["D"] = 4L }, TableUpdateMode.Replace);
        var replaced = table.GetEntity<TableEntity>("p", "r").Value;
        Assert.Equal(new[] { "D" }, replaced.Keys.Where(k => k is not ("PartitionKey" or "RowKey" or "Timestamp" or "odata.etag")));
        await table.UpsertEntityAsync(new TableEntity("p", "new") { ["E"] = 5 }, TableUpdateMode.Merge);
        Assert.Equal(5, table.GetEntity<TableEntity>("p", "new").Value.GetInt32("E"));

        // ETag.All (*) always matches; the current ETag too.
        await table.DeleteEntityAsync("p", "new", ETag.All);
        await table.DeleteEntityAsync("p", "r", replaced.ETag);
        Assert.Empty(table.Query<TableEntity>());
        Assert.False((await table.GetEntityIfExistsAsync<TableEntity>("p", "r")).HasValue);
    }

    [Fact]
    public void KeysWithQuotesSpacesAndUnicodeInEveryClient()
    {
        var table = NewTable("keys");
        string[] keys = { "O'Brien", "a b", "100%", "x+y&z=1", "caf\u00e9 \u2603", "semi;colon,comma", "(paren)", "''", "\U0001F600" };
        foreach (var k in keys)
            table.AddEntity(new TableEntity(k, k) { ["K"] = k });
        // Control characters, '/', '\\', '#' and '?' are not allowed in keys.
        foreach (var k in new[] { "tab\tend", "q?s", "back\\slash" })
        {
            var refused = Assert.Throws<RequestFailedException>(() => table.AddEntity(new TableEntity(k, "r")));
            Assert.Equal((400, "OutOfRangeInput"), (refused.Status, refused.ErrorCode));
        }
        foreach (var k in keys)
        {
            Assert.Equal(k, table.GetEntity<TableEntity>(k, k).Value.GetString("K"));
            Assert.Equal(k, Assert.Single(table.Query<TableEntity>(e => e.PartitionKey == k && e.RowKey == k)).RowKey);
        }
        var cosmos = Microsoft.Azure.Cosmos.Table.CloudStorageAccount.Parse(_server.ConnectionString);
        var cosmosTable = new Microsoft.Azure.Cosmos.Table.CloudTableClient(cosmos.TableStorageUri, cosmos.Credentials).GetTableReference(table.Name);
        var legacy = Microsoft.WindowsAzure.Storage.CloudStorageAccount.Parse(_server.ConnectionString);
        var legacyTable = new Microsoft.WindowsAzure.Storage.Table.CloudTableClient(legacy.TableStorageUri, legacy.Credentials).GetTableReference(table.Name);
        foreach (var k in keys)
        {
            var c = cosmosTable.Execute(Microsoft.Azure.Cosmos.Table.TableOperation.Retrieve<Microsoft.Azure.Cosmos.Table.DynamicTableEntity>(k, k));
            Assert.Equal(k, ((Microsoft.Azure.Cosmos.Table.DynamicTableEntity)c.Result).Properties["K"].StringValue);
            cosmosTable.Execute(Microsoft.Azure.Cosmos.Table.TableOperation.Merge(new Microsoft.Azure.Cosmos.Table.DynamicTableEntity(k, k) { ETag = "*" }));
            var l = legacyTable.ExecuteAsync(Microsoft.WindowsAzure.Storage.Table.TableOperation.Retrieve(k, k)).GetAwaiter().GetResult();
            Assert.Equal(k, ((Microsoft.WindowsAzure.Storage.Table.DynamicTableEntity)l.Result).Properties["K"].StringValue);
            legacyTable.ExecuteAsync(Microsoft.WindowsAzure.Storage.Table.TableOperation.Delete(
                new Microsoft.WindowsAzure.Storage.Table.DynamicTableEntity(k, k) { ETag = "*" })).GetAwaiter().GetResult();
        }
        Assert.Empty(table.Query<TableEntity>());
    }

    [Fact]
    public void ErrorsTheClientsSee()
    {
        var table = NewTable("errors");
        var exists = Assert.Throws<RequestFailedException>(() => _service.CreateTable(table.Name));
        Assert.Equal(409, exists.Status);
        Assert.Equal("TableAlreadyExists", exists.ErrorCode);
        Assert.Equal(409, table.CreateIfNotExists().GetRawResponse().Status);  // not an exception

        var tooMany = Enumerable.Range(0, 101).Select(i =>
            new TableTransactionAction(TableTransactionActionType.Add, new TableEntity("p", i.ToString("D3"))));
        var big = Assert.Throws<TableTransactionFailedException>(() => table.SubmitTransaction(tooMany));
        Assert.Equal(400, big.Status);
        Assert.Equal("InvalidInput", big.ErrorCode);
        var twice = Assert.Throws<TableTransactionFailedException>(() => table.SubmitTransaction(new[]
        {
            new TableTransactionAction(TableTransactionActionType.Add, new TableEntity("p", "same")),
            new TableTransactionAction(TableTransactionActionType.UpsertMerge, new TableEntity("p", "same")),
        }));
        Assert.Equal(400, twice.Status);
        Assert.Equal("InvalidDuplicateRow", twice.ErrorCode);
        Assert.Empty(table.Query<TableEntity>());

        var bad = Assert.Throws<RequestFailedException>(() => table.AddEntity(new TableEntity("a/b", "r")));
        Assert.Equal(400, bad.Status);
        var huge = Assert.Throws<RequestFailedException>(() => table.AddEntity(new TableEntity("p", "big") { ["S"] = new string('x', 32 * 1024 + 1) }));
        Assert.Equal(400, huge.Status);
        Assert.Equal("PropertyValueTooLarge", huge.ErrorCode);
        var badName = Assert.Throws<RequestFailedException>(() => _service.CreateTable("1bad"));
        Assert.Equal(400, badName.Status);
        Assert.Equal("InvalidResourceName", badName.ErrorCode);
        var missingTable = Assert.Throws<RequestFailedException>(() => _service.GetTableClient("nosuchtable0").AddEntity(new TableEntity("p", "r")));
        Assert.Equal(404, missingTable.Status);
        Assert.Equal("TableNotFound", missingTable.ErrorCode);
    }

    [Fact]
    public void SelectProjectsProperties()
    {
        var table = NewTable("select");
        table.AddEntity(new TableEntity("p", "r") { ["A"] = "a", ["B"] = 2, ["C"] = Sample.When });
        var got = table.Query<TableEntity>(e => e.PartitionKey == "p", select: new[] { "A", "C", "Missing" }).Single();
        Assert.Equal("a", got.GetString("A"));
        Assert.Equal(Sample.When, got.GetDateTimeOffset("C"));
        Assert.False(got.ContainsKey("B"));
        var one = table.GetEntity<TableEntity>("p", "r", select: new[] { "B" }).Value;
        Assert.Equal(2, one.GetInt32("B"));
        Assert.False(one.ContainsKey("A"));
        var typed = table.Query<TypedEntity>(select: new[] { "RowKey", "Int32" }).Single();
        Assert.Equal("r", typed.RowKey);
        Assert.Null(typed.Text);
    }

    [Fact]
    public void ServiceProperties()
    {
        var props = _service.GetProperties().Value;
        props.Cors.Clear();
        props.Cors.Add(new TableCorsRule("https://example.com,https://other.example", "GET,PUT,MERGE", "x-ms-*", "x-ms-request-id", 300));
        props.Logging.Read = true;
        props.Logging.Write = true;
        props.Logging.Delete = false;
        props.Logging.RetentionPolicy = new TableRetentionPolicy(true) { Days = 5 };
        props.HourMetrics.Enabled = true;
        props.HourMetrics.IncludeApis = true;
        props.HourMetrics.RetentionPolicy = new TableRetentionPolicy(true) { Days = 7 };
        _service.SetProperties(props);
        try
        {
            var again = _service.GetProperties().Value;
            var rule = Assert.Single(again.Cors);
            Assert.Equal("https://example.com,https://other.example", rule.AllowedOrigins);
            Assert.Equal("GET,PUT,MERGE", rule.AllowedMethods);
            Assert.Equal(300, rule.MaxAgeInSeconds);
            Assert.True(again.Logging.Read);
            Assert.False(again.Logging.Delete);
            Assert.Equal(5, again.Logging.RetentionPolicy.Days);
            Assert.True(again.HourMetrics.Enabled);
            Assert.Equal(7, again.HourMetrics.RetentionPolicy.Days);
            var stats = _service.GetStatistics();
            Assert.NotNull(stats.Value.GeoReplication);
        }
        finally
        {
            props.Cors.Clear();
            _service.SetProperties(props);
        }
    }

    [Fact]
    public void AccessPoliciesAndSasUsedByAnOlderClient()
    {
        var table = NewTable("acl");
        for (int i = 0; i < 5; i++)
            table.AddEntity(new TableEntity($"p{i}", "r") { ["V"] = i });

        var start = new DateTimeOffset(2026, 1, 1, 0, 0, 0, TimeSpan.Zero);
        var expiry = DateTimeOffset.UtcNow.AddHours(1);
        expiry = new DateTimeOffset(expiry.Year, expiry.Month, expiry.Day, expiry.Hour, expiry.Minute, expiry.Second, TimeSpan.Zero);
        table.SetAccessPolicy(new[]
        {
            new TableSignedIdentifier("readers", new TableAccessPolicy(start, expiry, "r")),
            new TableSignedIdentifier("writers", new TableAccessPolicy(null, null, "raud")),
            new TableSignedIdentifier("window", new TableAccessPolicy(start, expiry, null)),
        });
        var policies = table.GetAccessPolicies().Value.OrderBy(p => p.Id).ToList();
        Assert.Equal(new[] { "readers", "window", "writers" }, policies.Select(p => p.Id));
        Assert.Equal(start, policies[0].AccessPolicy.StartsOn);
        Assert.Equal(expiry, policies[0].AccessPolicy.ExpiresOn);
        Assert.Equal("r", policies[0].AccessPolicy.Permission);
        Assert.Null(policies[1].AccessPolicy.Permission);
        Assert.Equal("raud", policies[2].AccessPolicy.Permission);

        // A key-range SAS from this client, used by the Cosmos.Table client.
        var builder = table.GetSasBuilder(TableSasPermissions.Read | TableSasPermissions.Update, DateTimeOffset.UtcNow.AddHours(1));
        builder.PartitionKeyStart = "p1";
        builder.PartitionKeyEnd = "p3";
        var sasUri = table.GenerateSasUri(builder);
        var cosmos = new Microsoft.Azure.Cosmos.Table.CloudTable(
            new Uri($"{_server.Endpoint}/{table.Name}"),
            new Microsoft.Azure.Cosmos.Table.StorageCredentials(sasUri.Query));
        var inRange = cosmos.Execute(Microsoft.Azure.Cosmos.Table.TableOperation.Retrieve<Microsoft.Azure.Cosmos.Table.DynamicTableEntity>("p2", "r"));
        Assert.Equal(200, inRange.HttpStatusCode);
        // Outside the range, an entity that exists reads as one that does not (404, as Azure
        // answers), which this client's Retrieve reports as a result without an entity.
        var outside = cosmos.Execute(Microsoft.Azure.Cosmos.Table.TableOperation.Retrieve<Microsoft.Azure.Cosmos.Table.DynamicTableEntity>("p4", "r"));
        Assert.Equal(404, outside.HttpStatusCode);
        Assert.Null(outside.Result);
        var write = Assert.Throws<Microsoft.Azure.Cosmos.Table.StorageException>(() =>
            cosmos.Execute(Microsoft.Azure.Cosmos.Table.TableOperation.Insert(new Microsoft.Azure.Cosmos.Table.DynamicTableEntity("p2", "new"))));
        Assert.Equal(403, write.RequestInformation.HttpStatusCode);
        var query = new Microsoft.Azure.Cosmos.Table.TableQuery<Microsoft.Azure.Cosmos.Table.DynamicTableEntity>().Where(
            Microsoft.Azure.Cosmos.Table.TableQuery.GenerateFilterCondition("PartitionKey", "ge", "p2"));
        Assert.Equal(new[] { "p2", "p3" }, cosmos.ExecuteQuery(query).Select(e => e.PartitionKey));

        // A SAS naming a stored policy: the policy gives the start and expiry, the SAS the permission.
        var byPolicy = new TableSasBuilder(table.Name, TableSasPermissions.Read, default) { Identifier = "window" };
        var policyClient = new TableClient(table.GenerateSasUri(byPolicy));
        Assert.Equal(5, policyClient.Query<TableEntity>().Count());
        var denied = Assert.Throws<RequestFailedException>(() => policyClient.AddEntity(new TableEntity("x", "y")));
        Assert.Equal(403, denied.Status);

        // The service-level SAS of the account: list tables only.
        var accountSas = _service.GenerateSasUri(TableAccountSasPermissions.List, TableAccountSasResourceTypes.Service | TableAccountSasResourceTypes.Container, DateTimeOffset.UtcNow.AddHours(1));
        var sasService = new TableServiceClient(accountSas);
        Assert.Contains(table.Name, sasService.Query().Select(t => t.Name));
    }

    /// <summary>
    /// UseDevelopmentStorage=true against a server of its own on the default port 10002, when that
    /// port is free (another emulator or test run may hold it; then only the parse test above runs).
    /// </summary>
    [Fact]
    public void UseDevelopmentStorageOnTheDefaultPort()
    {
        try
        {
            var probe = new System.Net.Sockets.TcpListener(System.Net.IPAddress.Loopback, 10002);
            probe.Start();
            probe.Stop();
        }
        catch (System.Net.Sockets.SocketException)
        {
            return;  // busy: not ours to use
        }
        using var server = new ServerFixture(10002);
        Assert.Equal(10002, server.Port);
        var dev = new TableServiceClient("UseDevelopmentStorage=true");
        var table = dev.GetTableClient(ServerFixture.UniqueTable("devport"));
        table.Create();
        table.AddEntity(new TableEntity("p", "r") { ["V"] = 1 });
        Assert.Equal(1, table.Query<TableEntity>(e => e.PartitionKey == "p").Single().GetInt32("V"));
        var devAccount = Microsoft.WindowsAzure.Storage.CloudStorageAccount.DevelopmentStorageAccount;
        var legacy = new Microsoft.WindowsAzure.Storage.Table.CloudTableClient(devAccount.TableStorageUri, devAccount.Credentials);
        Assert.True(legacy.GetTableReference(table.Name).ExistsAsync().GetAwaiter().GetResult());
        var cosmosAccount = Microsoft.Azure.Cosmos.Table.CloudStorageAccount.Parse("UseDevelopmentStorage=true");
        var cosmos = new Microsoft.Azure.Cosmos.Table.CloudTableClient(cosmosAccount.TableStorageUri, cosmosAccount.Credentials);
        Assert.Contains(table.Name, cosmos.ListTables().Select(t => t.Name));
    }

    [Fact]
    public void UseDevelopmentStorageParses()
    {
        var dev = new TableServiceClient("UseDevelopmentStorage=true");
        Assert.Equal("devstoreaccount1", dev.AccountName);
        Assert.Equal(new Uri("http://127.0.0.1:10002/devstoreaccount1"), dev.Uri);
        var table = dev.GetTableClient("devtable");
        Assert.Equal(new Uri("http://127.0.0.1:10002/devstoreaccount1/devtable"), table.Uri);

        // The same account written out, pointed at this server.
        var explicitForm = new TableServiceClient(
            $"DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey={ServerFixture.Key};TableEndpoint={_server.Endpoint};");
        var name = ServerFixture.UniqueTable("dev");
        explicitForm.CreateTable(name);
        Assert.Contains(name, _service.Query(t => t.Name == name).Select(t => t.Name));
    }
}
