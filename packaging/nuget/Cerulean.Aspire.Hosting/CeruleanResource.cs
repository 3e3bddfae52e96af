using Aspire.Hosting.ApplicationModel;

namespace Aspire.Hosting;

/// <summary>
/// A Cerulean server run by the AppHost as an executable: the Azure Table service for the
/// development account on one HTTP endpoint (<see cref="TablesEndpointName"/>). Its connection
/// string names that endpoint as <c>TableEndpoint</c>, and the blob and queue endpoints of
/// another service when <see cref="CeruleanResourceBuilderExtensions.WithBlobsAndQueues(IResourceBuilder{CeruleanResource}, EndpointReference, EndpointReference)"/> added
/// them.
/// </summary>
public sealed class CeruleanResource : ExecutableResource, IResourceWithConnectionString
{
    /// <summary>The name of the server's endpoint.</summary>
    public const string TablesEndpointName = "tables";

    /// <summary>The account the server serves.</summary>
    public const string Account = "devstoreaccount1";

    /// <summary>The account's well-known key (the same as Azurite's development account).</summary>
    public const string Key =
        "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

    /// <summary>A resource named <paramref name="name"/> that runs <paramref name="command"/>.</summary>
    public CeruleanResource(string name, string command, string workingDirectory)
        : base(name, command, workingDirectory)
    {
        TablesEndpoint = new EndpointReference(this, TablesEndpointName);
    }

    /// <summary>The server's endpoint.</summary>
    public EndpointReference TablesEndpoint { get; }

    /// <summary>Where the server keeps its SQLite database; null: in memory.</summary>
    public string? DataDirectory { get; internal set; }

    /// <summary>A directory of <c>*.jsonl</c> files imported at start-up (<c>--seed</c>); null: none.</summary>
    public string? SeedDirectory { get; internal set; }

    internal ReferenceExpression? BlobEndpoint { get; set; }
    internal ReferenceExpression? QueueEndpoint { get; set; }

    /// <summary>
    /// <c>DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=…;TableEndpoint=…;</c>
    /// and, after <c>WithBlobsAndQueues</c>, <c>BlobEndpoint=…;QueueEndpoint=…;</c> too.
    /// </summary>
    public ReferenceExpression ConnectionStringExpression =>
        CeruleanConnectionString.Build(TablesEndpoint, BlobEndpoint, QueueEndpoint);
}
