// The AppHost: Cerulean for tables, and a project that gets its connection string by reference.
var builder = DistributedApplication.CreateBuilder(args);
var tables = builder.AddCerulean("tables");
builder.AddProject<Projects.Worker>("worker").WithReference(tables).WaitFor(tables);
builder.Build().Run();
