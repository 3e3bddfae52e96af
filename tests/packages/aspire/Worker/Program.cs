// Writes the entity worker/1 to the table "written" through the connection string the AppHost
// injected, then exits: 0 on success.
using Azure.Data.Tables;

string? connection = Environment.GetEnvironmentVariable("ConnectionStrings__tables");
if (string.IsNullOrEmpty(connection))
{
    Console.Error.WriteLine("no ConnectionStrings__tables");
    return 1;
}
var table = new TableClient(connection, "written");
await table.CreateIfNotExistsAsync();
await table.UpsertEntityAsync(new TableEntity("worker", "1") { ["Via"] = "WithReference" });
Console.WriteLine("wrote worker/1");
return 0;
