using Cerulean.Testing;

var server = await CeruleanServer.StartAsync(new CeruleanServerOptions { Storage = CeruleanStorage.TemporaryDirectory });
Console.WriteLine($"{server.ProcessId} {server.Port}");
await Task.Delay(Timeout.Infinite);
