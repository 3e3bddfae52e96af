using Aspire.Hosting.ApplicationModel;
using Cerulean.Testing;

namespace Aspire.Hosting;

/// <summary><c>AddCerulean</c> and the options of a <see cref="CeruleanResource"/>.</summary>
public static class CeruleanResourceBuilderExtensions
{
    /// <summary>
    /// Adds a Cerulean server, run as an executable from the server that Cerulean.Testing carries
    /// (or <c>CERULEAN_BINARY</c>), in memory unless <see cref="WithDataDirectory"/> says
    /// otherwise. <c>WithReference(tables)</c> gives a project the connection string as
    /// <c>ConnectionStrings__NAME</c>; the dashboard shows the server healthy once
    /// <c>/_health</c> answers 200.
    /// </summary>
    /// <param name="builder">The AppHost's builder.</param>
    /// <param name="name">The resource's name, and the connection string's.</param>
    /// <param name="port">The port the AppHost serves it on; null: a free one each run.</param>
    /// <param name="binaryPath">The server executable; null: <c>CERULEAN_BINARY</c>, else the packaged one.</param>
    /// <exception cref="CeruleanBinaryNotFoundException">no server executable for this platform.</exception>
    public static IResourceBuilder<CeruleanResource> AddCerulean(this IDistributedApplicationBuilder builder,
                                                                 string name, int? port = null,
                                                                 string? binaryPath = null)
    {
        ArgumentNullException.ThrowIfNull(builder);
        string binary = CeruleanBinary.EnsureExecutable(CeruleanBinary.Resolve(binaryPath));
        var resource = new CeruleanResource(name, binary, builder.AppHostDirectory);
        return builder.AddResource(resource)
            .WithHttpEndpoint(port: port, name: CeruleanResource.TablesEndpointName)
            .WithArgs(context =>
            {
                context.Args.Add("--tableHost");
                context.Args.Add("127.0.0.1");
                context.Args.Add("--tablePort");
                context.Args.Add(resource.TablesEndpoint.Property(EndpointProperty.TargetPort));
                if (resource.DataDirectory != null)
                {
                    context.Args.Add("--location");
                    context.Args.Add(resource.DataDirectory);
                }
                else
                {
                    context.Args.Add("--inMemoryPersistence");
                }
                if (resource.SeedDirectory != null)
                {
                    context.Args.Add("--seed");
                    context.Args.Add(resource.SeedDirectory);
                }
            })
            .WithHttpHealthCheck("/_health", endpointName: CeruleanResource.TablesEndpointName);
    }

    /// <summary>Keeps the tables in SQLite under <paramref name="directory"/> (relative to the
    /// AppHost's directory), so they persist across AppHost runs; created if missing.</summary>
    public static IResourceBuilder<CeruleanResource> WithDataDirectory(this IResourceBuilder<CeruleanResource> builder,
                                                                       string directory)
    {
        string full = Path.GetFullPath(directory, builder.ApplicationBuilder.AppHostDirectory);
        Directory.CreateDirectory(full);
        builder.Resource.DataDirectory = full;
        return builder;
    }

    /// <summary>Imports every <c>*.jsonl</c> file of <paramref name="directory"/> (relative to the
    /// AppHost's directory) at start-up, one table per file (<c>--seed</c>).</summary>
    public static IResourceBuilder<CeruleanResource> WithSeed(this IResourceBuilder<CeruleanResource> builder,
                                                              string directory)
    {
        builder.Resource.SeedDirectory = Path.GetFullPath(directory, builder.ApplicationBuilder.AppHostDirectory);
        return builder;
    }

    /// <summary>Adds the blob and queue endpoints of another service (Azurite's, serving the same
    /// development account) to the connection string, so that one reference gives a project
    /// tables, blobs and queues: <c>BlobServiceClient</c> and <c>QueueServiceClient</c> read the
    /// same connection string as <c>TableServiceClient</c>.</summary>
    /// <param name="builder">The Cerulean resource.</param>
    /// <param name="blob">The blob endpoint, e.g. <c>azurite.GetEndpoint("blob")</c>.</param>
    /// <param name="queue">The queue endpoint, e.g. <c>azurite.GetEndpoint("queue")</c>.</param>
    public static IResourceBuilder<CeruleanResource> WithBlobsAndQueues(this IResourceBuilder<CeruleanResource> builder,
                                                                        EndpointReference blob, EndpointReference queue)
    {
        builder.Resource.BlobEndpoint = AccountUrl(blob);
        builder.Resource.QueueEndpoint = AccountUrl(queue);
        return builder;
    }

    static ReferenceExpression AccountUrl(EndpointReference endpoint)
    {
        var b = new ReferenceExpressionBuilder();
        b.Append($"{endpoint.Property(EndpointProperty.Url)}");
        b.AppendLiteral($"/{CeruleanResource.Account}");
        return b.Build();
    }
}
