// Entity classes shared by the tests: one for each client generation (each derives from or
// implements its own client's entity type, so the members are declared on each), every EDM type
// on each, and the sample values they are filled with and checked against.
using Azure;
using Azure.Data.Tables;
using Xunit;

namespace Cerulean.E2E;

/// <summary>The sample members every typed entity class below has.</summary>
public interface ISampleValues
{
    string Text { get; set; }
    int Int32 { get; set; }
    long Int64 { get; set; }
    double Double { get; set; }
    bool Bool { get; set; }
    Guid Id { get; set; }
    DateTimeOffset When { get; set; }
    DateTime WhenUtc { get; set; }
    byte[] Bytes { get; set; }
    string NullText { get; set; }
    int? NullInt { get; set; }
    double? NullDouble { get; set; }
    DateTimeOffset? NullWhen { get; set; }
    Guid? NullId { get; set; }
}

/// <summary>Azure.Data.Tables typed entity with every EDM type (and nullable ones left null).</summary>
public sealed class TypedEntity : ITableEntity, ISampleValues
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
public sealed class CosmosTyped : Microsoft.Azure.Cosmos.Table.TableEntity, ISampleValues
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
public sealed class LegacyTyped : Microsoft.WindowsAzure.Storage.Table.TableEntity, ISampleValues
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
            .ExecuteAsync(Microsoft.WindowsAzure.Storage.Table.TableOperation.Insert(Fill(new LegacyTyped(pk, rk), d)))
            .GetAwaiter().GetResult();

    public const string Text = "hé \"quoted\" 'single' \u2603";

    /// <summary>Sets the sample values (nullable members stay null) and <paramref name="d"/>.</summary>
    public static T Fill<T>(T e, double d) where T : ISampleValues
    {
        e.Text = Text;
        e.Int32 = int.MinValue;
        e.Int64 = long.MaxValue;
        e.Double = d;
        e.Bool = true;
        e.Id = Id;
        e.When = When;
        e.WhenUtc = WhenUtc;
        e.Bytes = Bytes;
        return e;
    }

    public static TypedEntity Typed(string pk, string rk, double d) => Fill(new TypedEntity { PartitionKey = pk, RowKey = rk }, d);

    /// <summary>Checks every member read back exactly: doubles bit for bit, times to the 100 ns tick.</summary>
    public static void AssertRoundTrip(double d, ISampleValues e)
    {
        Assert.Equal(Text, e.Text);
        Assert.Equal(int.MinValue, e.Int32);
        Assert.Equal(long.MaxValue, e.Int64);
        Assert.Equal(BitConverter.DoubleToInt64Bits(d), BitConverter.DoubleToInt64Bits(e.Double));
        Assert.True(e.Bool);
        Assert.Equal(Id, e.Id);
        Assert.Equal(When.UtcTicks, e.When.UtcTicks);
        Assert.Equal(WhenUtc.Ticks, e.WhenUtc.ToUniversalTime().Ticks);
        Assert.Equal(Bytes, e.Bytes);
        Assert.Null(e.NullText);
        Assert.Null(e.NullInt);
        Assert.Null(e.NullDouble);
        Assert.Null(e.NullWhen);
        Assert.Null(e.NullId);
    }
}
