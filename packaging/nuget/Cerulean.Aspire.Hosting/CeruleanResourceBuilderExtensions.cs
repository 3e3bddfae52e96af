using Aspire.Hosting.ApplicationModel;
using System.Reflection;
using Cerulean.Testing;

namespace Aspire.Hosting;

/// <summary><c>AddCerulean</c>, <c>AddCeruleanContainer</c> and the options of their resources.</summary>
public static class CeruleanResourceBuilderExtensions
{
    /// <summary>
    /// Adds a Cerulean server, run as an executable from the server that Cerulean.Testing carries
    /// (or <c>CERULEAN_BINARY</c>), in memory unless <see cref="WithDataDirectory(IResourceBuilder{CeruleanResource}, string)"/> says
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
        builder.Resource.BlobEndpoint = CeruleanConnectionString.AccountUrl(blob);
        builder.Resource.QueueEndpoint = CeruleanConnectionString.AccountUrl(queue);
        return builder;
    }

    /// <summary>
    /// Adds a Cerulean server run as a container of Cerulean's image (by default
    /// <c>localhost/cerulean:VERSION</c>, the package's version, as <c>scripts/image.sh</c> of
    /// Cerulean's source builds it; Aspire's <c>WithImage</c>, <c>WithImageRegistry</c> and
    /// <c>WithImageTag</c> name another), in memory unless <see cref="WithDataVolume"/> or
    /// <see cref="WithDataDirectory(IResourceBuilder{CeruleanContainerResource}, string)"/> says
    /// otherwise. The same endpoint, connection string and health check as
    /// <see cref="AddCerulean"/>.
    /// </summary>
    /// <param name="builder">The AppHost's builder.</param>
    /// <param name="name">The resource's name, and the connection string's.</param>
    /// <param name="port">The host port the AppHost serves it on; null: a free one each run.</param>
    public static IResourceBuilder<CeruleanContainerResource> AddCeruleanContainer(
        this IDistributedApplicationBuilder builder, string name, int? port = null)
    {
        ArgumentNullException.ThrowIfNull(builder);
        var resource = new CeruleanContainerResource(name);
        return builder.AddResource(resource)
            .WithImage(CeruleanContainerResource.DefaultImage, ImageTag())
            .WithImageRegistry(CeruleanContainerResource.DefaultRegistry)
            .WithHttpEndpoint(port: port, targetPort: CeruleanContainerResource.TargetPort,
                              name: CeruleanResource.TablesEndpointName)
            // The image's entry point listens on 0.0.0.0:10002 and keeps its data in /data.
            .WithArgs(context =>
            {
                if (!resource.Persistent)
                {
                    context.Args.Add("--inMemoryPersistence");
                }
                if (resource.SeedDirectory != null)
                {
                    context.Args.Add("--seed");
                    context.Args.Add(CeruleanContainerResource.SeedPath);
                }
            })
            .WithHttpHealthCheck("/_health", endpointName: CeruleanResource.TablesEndpointName);
    }

    /// <summary>Keeps the tables in the container runtime's named volume <paramref name="name"/>
    /// (null: one named after the AppHost and the resource), mounted at <c>/data</c>, so they
    /// persist across AppHost runs. A new volume takes the image's <c>/data</c>, which belongs to
    /// the server's user (65532).</summary>
    public static IResourceBuilder<CeruleanContainerResource> WithDataVolume(
        this IResourceBuilder<CeruleanContainerResource> builder, string? name = null)
    {
        builder.Resource.Persistent = true;
        return builder.WithVolume(name ?? VolumeNameGenerator.Generate(builder, "data"),
                                  CeruleanContainerResource.DataPath);
    }

    /// <summary>Keeps the tables in SQLite in the host directory <paramref name="directory"/>
    /// (relative to the AppHost's directory; created if missing), mounted at <c>/data</c>. The
    /// server runs as user 65532 in the container, so the directory must be writable by that
    /// user (<see cref="WithDataVolume"/> needs nothing of the kind).</summary>
    public static IResourceBuilder<CeruleanContainerResource> WithDataDirectory(
        this IResourceBuilder<CeruleanContainerResource> builder, string directory)
    {
        string full = Path.GetFullPath(directory, builder.ApplicationBuilder.AppHostDirectory);
        Directory.CreateDirectory(full);
        builder.Resource.Persistent = true;
        return builder.WithBindMount(full, CeruleanContainerResource.DataPath);
    }

    /// <summary>Imports every <c>*.jsonl</c> file of the host directory <paramref name="directory"/>
    /// (relative to the AppHost's directory, mounted read-only at <c>/seed</c>) at start-up, one
    /// table per file (<c>--seed</c>).</summary>
    public static IResourceBuilder<CeruleanContainerResource> WithSeed(
        this IResourceBuilder<CeruleanContainerResource> builder, string directory)
    {
        string full = Path.GetFullPath(directory, builder.ApplicationBuilder.AppHostDirectory);
        builder.Resource.SeedDirectory = full;
        return builder.WithBindMount(full, CeruleanContainerResource.SeedPath, isReadOnly: true);
    }

    /// <summary>Adds another service's blob and queue endpoints to the connection string, as
    /// <see cref="WithBlobsAndQueues(IResourceBuilder{CeruleanResource}, EndpointReference, EndpointReference)"/>
    /// does for the executable.</summary>
    public static IResourceBuilder<CeruleanContainerResource> WithBlobsAndQueues(
        this IResourceBuilder<CeruleanContainerResource> builder, EndpointReference blob, EndpointReference queue)
    {
        builder.Resource.BlobEndpoint = CeruleanConnectionString.AccountUrl(blob);
        builder.Resource.QueueEndpoint = CeruleanConnectionString.AccountUrl(queue);
        return builder;
    }

    // The package's version without its build metadata: the image's tag.
    static string ImageTag()
    {
        string version = typeof(CeruleanContainerResource).Assembly
            .GetCustomAttribute<AssemblyInformationalVersionAttribute>()?.InformationalVersion ?? "latest";
        int plus = version.IndexOf('+');
        return plus < 0 ? version : version[..plus];
    }
}
