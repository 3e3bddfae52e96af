// xunit v3 with the ready-made CeruleanFixture: the class is all a user writes.
using Azure.Data.Tables;
using Cerulean.Testing;
using Xunit;

public sealed class ReadyMadeFixtureTests(CeruleanFixture cerulean) : IClassFixture<CeruleanFixture>
{
    [Fact]
    public async Task A_class_gets_an_account_of_its_own()
    {
        TableClient orders = cerulean.Account.GetTableClient("orders");
        await orders.CreateAsync(TestContext.Current.CancellationToken);
        Assert.NotEqual(CeruleanServer.Account, cerulean.Account.Name);
        await foreach (var table in cerulean.Account.TableServiceClient.QueryAsync(cancellationToken: TestContext.Current.CancellationToken))
            Assert.Equal("orders", table.Name);
    }
}
