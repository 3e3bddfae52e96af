// Entity classes shared by the tests: one for each client generation, every EDM type on each.
using Azure;
using Azure.Data.Tables;

namespace Cerulean.E2E;

/// <summary>Azure.Data.Tables typed entity with every EDM type (and nullable ones left null).</summary>
public sealed class TypedEntity : ITableEntity
{
    public string PartitionKey { get; set; }
    public string RowKey { get; set; }
    public DateTimeOffset? Timestamp { get; set; }
    public ETag ETag { get; set; }

    public string Text { get; set; }
    public int Int32 { get; set; }
    public long Int64 { get; set; }
    public double Double { get; set; }
    public bool Bool { get; set; }
    public Guid Id { get; set; }
    public DateTimeOffset When { get; set; }
    public DateTime WhenUtc { get; set; }
    public byte[] Bytes { get; set; }
    public string NullText { get; set; }
    public int? NullInt { get; set; }
    public double? NullDouble { get; set; }
    public DateTimeOffset? NullWhen { get; set; }
    public Guid? NullId { get; set; }
}

/// <summary>A post in a blog: the reverse-chronological example of the table-design guide.</summary>
public sealed class Post : ITableEntity
{
    public string PartitionKey { get; set; }
    public string RowKey { get; set; }
    public DateTimeOffset? Timestamp { get; set; }
    public ETag ETag { get; set; }
    public string Title { get; set; }
    public DateTimeOffset Posted { get; set; }
}

/// <summary>Cosmos.Table (Microsoft.Azure.Cosmos.Table) typed entity with every EDM type.</summary>
public sealed class CosmosTyped : Microsoft.Azure.Cosmos.Table.TableEntity
{
    public CosmosTyped() { }
    public CosmosTyped(string pk, string rk) : base(pk, rk) { }
    public string Text { get; set; }
    public int Int32 { get; set; }
    public long Int64 { get; set; }
    public double Double { get; set; }
    public bool Bool { get; set; }
    public Guid Id { get; set; }
    public DateTimeOffset When { get; set; }
    public DateTime WhenUtc { get; set; }
    public byte[] Bytes { get; set; }
    public string NullText { get; set; }
    public int? NullInt { get; set; }
    public double? NullDouble { get; set; }
    public DateTimeOffset? NullWhen { get; set; }
    public Guid? NullId { get; set; }
}

/// <summary>WindowsAzure.Storage typed entity with every EDM type.</summary>
public sealed class LegacyTyped : Microsoft.WindowsAzure.Storage.Table.TableEntity
{
    public LegacyTyped() { }
    public LegacyTyped(string pk, string rk) : base(pk, rk) { }
    public string Text { get; set; }
    public int Int32 { get; set; }
    public long Int64 { get; set; }
    public double Double { get; set; }
    public bool Bool { get; set; }
    public Guid Id { get; set; }
    public DateTimeOffset When { get; set; }
    public DateTime WhenUtc { get; set; }
    public byte[] Bytes { get; set; }
    public string NullText { get; set; }
    public int? NullInt { get; set; }
    public double? NullDouble { get; set; }
    public DateTimeOffset? NullWhen { get; set; }
    public Guid? NullId { get; set; }
}

public static class Sample
{
    /// <summary>A time with a non-zero 100 ns digit, so a server that keeps milliseconds only fails.</summary>
    public static readonly DateTimeOffset When = new DateTimeOffset(2026, 11, 26, 9, 30, 27, TimeSpan.Zero).AddTicks(1234567);
    public static readonly DateTime WhenUtc = new DateTime(1601, 1, 1, 0, 0, 0, DateTimeKind.Utc).AddTicks(9876543);
    public static readonly Guid Id = Guid.Parse("c9da6455-213d-42c9-9a79-3e9149a57833");
    public static readonly byte[] Bytes = { 0, 1, 2, 0xfe, 0xff, 0x7f, 0x80 };
    public static readonly double[] Doubles = { 0.1, -1.5e-300, 1.7976931348623157e308, double.Epsilon, double.NaN, double.PositiveInfinity, double.NegativeInfinity, 2.0, -0.0 };

    /// <summary>
    /// Writes the sample entity with WindowsAzure.Storage, which sends NaN and ±Infinity as annotated
    /// Edm.Double strings. Azure.Data.Tables cannot write them (System.Text.Json refuses non-finite
    /// numbers) and Cosmos.Table 1.0.8 sends them as bare strings (so they are stored as Edm.String,
    /// on Azure too); both read them back when another client wrote them.
    /// </summary>
    /// <summary>
    /// Whether Azure.Data.Tables and Cosmos.Table write the double so that it reads back bit for bit:
    /// not NaN or ±Infinity (see above), and not -0.0, which Azure.Data.Tables writes as the JSON
    /// integer token -0 (annotated Edm.Double): an OData reader reads it as the integer 0, so the
    /// stored double is +0.0.
    /// </summary>
    public static bool ClientWritesExactly(double d) => double.IsFinite(d) && !(d == 0 && double.IsNegative(d));

    public static void InsertWithLegacyClient(string connectionString, string table, string pk, string rk, double d) =>
        Microsoft.WindowsAzure.Storage.CloudStorageAccount.Parse(connectionString).CreateCloudTableClient()
            .GetTableReference(table)
            .ExecuteAsync(Microsoft.WindowsAzure.Storage.Table.TableOperation.Insert(LegacyStorageTests.NewTyped(pk, rk, d)))
            .GetAwaiter().GetResult();

    public static TypedEntity Typed(string pk, string rk, double d) => new()
    {
        PartitionKey = pk, RowKey = rk, Text = "hé \"quoted\" 'single' \u2603", Int32 = int.MinValue, Int64 = long.MaxValue,
        Double = d, Bool = true, Id = Id, When = When, WhenUtc = WhenUtc, Bytes = Bytes,
    };
}
