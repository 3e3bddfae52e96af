using Aspire.Hosting.ApplicationModel;

namespace Aspire.Hosting;

/// <summary>The connection string both kinds of Cerulean resource give their references.</summary>
static class CeruleanConnectionString
{
    /// <summary>The development account, its key and <paramref name="tables"/>'s URL as
    /// <c>TableEndpoint</c>, then <c>BlobEndpoint</c> and <c>QueueEndpoint</c> when given.</summary>
    public static ReferenceExpression Build(EndpointReference tables, ReferenceExpression? blob,
                                            ReferenceExpression? queue)
    {
        var b = new ReferenceExpressionBuilder();
        b.AppendLiteral($"DefaultEndpointsProtocol=http;AccountName={CeruleanResource.Account};" +
                        $"AccountKey={CeruleanResource.Key};TableEndpoint=");
        b.Append($"{tables.Property(EndpointProperty.Url)}");
        b.AppendLiteral($"/{CeruleanResource.Account};");
        if (blob != null)
        {
            b.AppendLiteral("BlobEndpoint=");
            b.Append($"{blob}");
            b.AppendLiteral(";");
        }
        if (queue != null)
        {
            b.AppendLiteral("QueueEndpoint=");
            b.Append($"{queue}");
            b.AppendLiteral(";");
        }
        return b.Build();
    }

    /// <summary>The development account's URL on <paramref name="endpoint"/>.</summary>
    public static ReferenceExpression AccountUrl(EndpointReference endpoint)
    {
        var b = new ReferenceExpressionBuilder();
        b.Append($"{endpoint.Property(EndpointProperty.Url)}");
        b.AppendLiteral($"/{CeruleanResource.Account}");
        return b.Build();
    }
}
