using Aspire.Hosting.ApplicationModel;

namespace Aspire.Hosting;

/// <summary>
/// A Cerulean server run by the AppHost as a container of Cerulean's image (the static server
/// alone, listening on port <see cref="TargetPort"/> of the container, its data in the
/// <see cref="DataPath"/> volume). The same endpoint name and connection string as
/// <see cref="CeruleanResource"/>.
/// </summary>
public sealed class CeruleanContainerResource : ContainerResource, IResourceWithConnectionString
{
    /// <summary>The image's registry by default: the local image store (the image is not published).</summary>
    public const string DefaultRegistry = "localhost";

    /// <summary>The image's name by default, as <c>scripts/image.sh</c> tags it.</summary>
    public const string DefaultImage = "cerulean";

    /// <summary>The port the server listens on inside the container.</summary>
    public const int TargetPort = 10002;

    /// <summary>Where the image keeps the server's SQLite database.</summary>
    public const string DataPath = "/data";

    /// <summary>Where <see cref="CeruleanResourceBuilderExtensions.WithSeed(IResourceBuilder{CeruleanContainerResource}, string)"/>
    /// mounts the seed directory.</summary>
    public const string SeedPath = "/seed";

    /// <summary>A resource named <paramref name="name"/>.</summary>
    public CeruleanContainerResource(string name) : base(name)
    {
        TablesEndpoint = new EndpointReference(this, CeruleanResource.TablesEndpointName);
    }

    /// <summary>The server's endpoint.</summary>
    public EndpointReference TablesEndpoint { get; }

    /// <summary>True once a data directory or volume is mounted at <see cref="DataPath"/>; false: in memory.</summary>
    public bool Persistent { get; internal set; }

    /// <summary>The host directory mounted at <see cref="SeedPath"/>; null: none.</summary>
    public string? SeedDirectory { get; internal set; }

    internal ReferenceExpression? BlobEndpoint { get; set; }
    internal ReferenceExpression? QueueEndpoint { get; set; }

    /// <summary>The same connection string as <see cref="CeruleanResource.ConnectionStringExpression"/>.</summary>
    public ReferenceExpression ConnectionStringExpression =>
        CeruleanConnectionString.Build(TablesEndpoint, BlobEndpoint, QueueEndpoint);
}
