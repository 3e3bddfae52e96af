// AddCeruleanContainer's resource as the AppHost builds it, without starting it: the image, the
// arguments given to its entry point, the endpoint, the mounts, the health check and the
// connection string a referencing project gets (read back by Azure.Data.Tables).
using Aspire.Hosting;
using Aspire.Hosting.ApplicationModel;
using Aspire.Hosting.Testing;
using Azure.Data.Tables;
using Microsoft.Extensions.DependencyInjection;
using Xunit;

// GetArgumentValuesAsync and GetEnvironmentVariableValuesAsync evaluate a resource's callbacks as
// the orchestrator would; Aspire marks them obsolete in favour of a builder meant for orchestrators.
#pragma warning disable CS0618

public sealed class ContainerModelTests
{
    static readonly TimeSpan Timeout = TimeSpan.FromMinutes(1);

    [Fact]
    public async Task The_image_in_memory_on_the_tables_endpoint_with_a_health_check()
    {
        IDistributedApplicationTestingBuilder builder = await DistributedApplicationTestingBuilder.CreateAsync<Projects.AppHost>(
            ["--DcpPublisher:RandomizePorts=false"]).WaitAsync(Timeout);
        var box = builder.AddCeruleanContainer("box", port: 41002);
        var reader = builder.AddProject<Projects.Worker>("reader").WithReference(box);
        await using DistributedApplication app = await builder.BuildAsync().WaitAsync(Timeout);
        CeruleanContainerResource resource = app.Services.GetRequiredService<DistributedApplicationModel>()
            .Resources.OfType<CeruleanContainerResource>().Single();
        Assert.Same(box.Resource, resource);

        Version version = typeof(CeruleanContainerResource).Assembly.GetName().Version!;
        Assert.True(resource.TryGetContainerImageName(out string? image));
        Assert.Equal($"localhost/cerulean:{version.ToString(3)}", image);
        Assert.Null(resource.Entrypoint); // the image's: cerulean --tableHost 0.0.0.0 --location /data
        Assert.Equal(new[] { "--inMemoryPersistence" }, await Arguments(resource));
        Assert.Empty(resource.Annotations.OfType<ContainerMountAnnotation>());

        EndpointAnnotation endpoint = Assert.Single(resource.Annotations.OfType<EndpointAnnotation>());
        Assert.Equal("tables", endpoint.Name);
        Assert.Equal("http", endpoint.UriScheme);
        Assert.Equal(10002, endpoint.TargetPort);
        Assert.Equal(41002, endpoint.Port);
        Assert.Single(resource.Annotations.OfType<HealthCheckAnnotation>());

        Assert.Equal(
            "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=" + CeruleanResource.Key +
            ";TableEndpoint={box.bindings.tables.url}/devstoreaccount1;",
            resource.ConnectionStringExpression.ValueExpression);

        // Once the endpoint is allocated, the referencing project gets it as ConnectionStrings__box.
        endpoint.AllocatedEndpoint = new AllocatedEndpoint(endpoint, "localhost", 41002);
        Dictionary<string, string> environment = await reader.Resource
            .GetEnvironmentVariableValuesAsync(DistributedApplicationOperation.Run).AsTask().WaitAsync(Timeout);
        string connection = environment["ConnectionStrings__box"];
        Assert.Equal(connection, await resource.ConnectionStringExpression.GetValueAsync(default).AsTask().WaitAsync(Timeout));
        Assert.Equal(new Uri("http://localhost:41002/devstoreaccount1"), new TableServiceClient(connection).Uri);
        Assert.Equal("devstoreaccount1", new TableServiceClient(connection).AccountName);
    }

    [Fact]
    public async Task A_data_volume_a_read_only_seed_and_blobs_and_queues_beside_it()
    {
        string root = Directory.CreateTempSubdirectory("cerulean-aspire-container-").FullName;
        try
        {
            IDistributedApplicationTestingBuilder builder =
                await DistributedApplicationTestingBuilder.CreateAsync<Projects.AppHost>().WaitAsync(Timeout);
            var azurite = builder.AddCerulean("azurite");
            var box = builder.AddCeruleanContainer("box").WithDataVolume("cerulean-box-data")
                .WithSeed(root).WithBlobsAndQueues(azurite.GetEndpoint("tables"), azurite.GetEndpoint("tables"));
            await using DistributedApplication app = await builder.BuildAsync().WaitAsync(Timeout);

            Assert.True(box.Resource.Persistent);
            Assert.Equal(new[] { "--seed", "/seed" }, await Arguments(box.Resource));
            ContainerMountAnnotation[] mounts = box.Resource.Annotations.OfType<ContainerMountAnnotation>().ToArray();
            Assert.Equal(2, mounts.Length);
            ContainerMountAnnotation data = mounts.Single(m => m.Target == "/data");
            Assert.Equal(ContainerMountType.Volume, data.Type);
            Assert.Equal("cerulean-box-data", data.Source);
            Assert.False(data.IsReadOnly);
            ContainerMountAnnotation seed = mounts.Single(m => m.Target == "/seed");
            Assert.Equal(ContainerMountType.BindMount, seed.Type);
            Assert.Equal(root, seed.Source);
            Assert.True(seed.IsReadOnly);

            Assert.EndsWith(
                ";TableEndpoint={box.bindings.tables.url}/devstoreaccount1;" +
                "BlobEndpoint={azurite.bindings.tables.url}/devstoreaccount1;" +
                "QueueEndpoint={azurite.bindings.tables.url}/devstoreaccount1;",
                box.Resource.ConnectionStringExpression.ValueExpression);
        }
        finally
        {
            Directory.Delete(root, recursive: true);
        }
    }

    [Fact]
    public async Task A_data_directory_is_a_bind_mount_created_if_missing()
    {
        string root = Directory.CreateTempSubdirectory("cerulean-aspire-container-").FullName;
        try
        {
            IDistributedApplicationTestingBuilder builder =
                await DistributedApplicationTestingBuilder.CreateAsync<Projects.AppHost>().WaitAsync(Timeout);
            string data = Path.Combine(root, "data");
            var box = builder.AddCeruleanContainer("box").WithDataDirectory(data);
            var unnamed = builder.AddCeruleanContainer("unnamed").WithDataVolume();
            await using DistributedApplication app = await builder.BuildAsync().WaitAsync(Timeout);

            Assert.True(Directory.Exists(data));
            Assert.Empty(await Arguments(box.Resource));
            ContainerMountAnnotation mount = Assert.Single(box.Resource.Annotations.OfType<ContainerMountAnnotation>());
            Assert.Equal((ContainerMountType.BindMount, data, "/data", false),
                         (mount.Type, mount.Source, mount.Target, mount.IsReadOnly));
            ContainerMountAnnotation volume = Assert.Single(unnamed.Resource.Annotations.OfType<ContainerMountAnnotation>());
            Assert.Equal(ContainerMountType.Volume, volume.Type);
            Assert.Contains("unnamed", volume.Source);
        }
        finally
        {
            Directory.Delete(root, recursive: true);
        }
    }

    static async Task<string[]> Arguments(IResourceWithArgs resource) =>
        await resource.GetArgumentValuesAsync(DistributedApplicationOperation.Run).AsTask().WaitAsync(Timeout);
}
